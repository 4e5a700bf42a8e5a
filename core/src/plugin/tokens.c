#define _GNU_SOURCE
#include "plugin/tokens.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/fileio.h"
#include "base/lines.h"
#include "base/macro.h"
#include "base/newest.h"
#include "model/outcome.h"

/* The counts of one unit, in the order of struct tb_tokens. */
enum { T_INPUT, T_CACHED, T_CACHE_WRITE, T_OUTPUT, T_REASONING, T_REQUESTS, T_N };

struct unit {
        char *key; /* NULL: a free slot */
        uint64_t v[T_N];
};

struct tokens_tally {
        struct unit *slots; /* open addressing, linear probing; a power of two */
        size_t cap, n;
        char models[TOKENS_MODELS_SEEN][TOKENS_MODEL_MAX + 1];
        size_t n_models;
        char source[TOKENS_SOURCE_MAX];
        int home_fd;         /* the Trial's home, the caller's */
        uid_t owner;         /* the session's user: only its files are read */
        uint64_t bytes_left; /* of TOKENS_MAX_TOTAL_BYTES */
        bool partial;
        char why[160]; /* the first reason it is partial */
};

struct tokens_tally *tokens_tally_new(int home_fd, uid_t owner)
{
        struct tokens_tally *t = xcalloc(1, sizeof *t);
        t->home_fd = home_fd;
        t->owner = owner;
        t->bytes_left = TOKENS_MAX_TOTAL_BYTES;
        return t;
}

void tokens_tally_free(struct tokens_tally *t)
{
        if (!t)
                return;
        for (size_t i = 0; i < t->cap; i++)
                free(t->slots[i].key);
        free(t->slots);
        free(t);
}

static void tally_partial(struct tokens_tally *t, const char *why)
{
        if (!t->partial)
                snprintf(t->why, sizeof t->why, "%s", why);
        t->partial = true;
}

int tokens_home_fd(const struct tokens_tally *t)
{
        if (!t)
                return -EPERM;
        return t->home_fd >= 0 ? t->home_fd : -EBADF;
}

/* ---- reading ---- */

struct jsonl_read {
        struct tb_host *host;
        tb_jsonl_fn fn;
        void *ctx;
        unsigned file;
        json_tokener *tok;
        int stopped; /* what `fn` stopped the reading with */
};

/* One line: handed on when it is one JSON object (and nothing after it). */
static int jsonl_line(char *line, size_t len, void *ctx)
{
        struct jsonl_read *r = ctx;
        if (memchr(line, '\0', len))
                return 0;
        json_tokener_reset(r->tok);
        json_object *j = json_tokener_parse_ex(r->tok, line, (int)len);
        if (!j)
                return 0;
        size_t end = json_tokener_get_parse_end(r->tok);
        int ret = 0;
        if (json_object_is_type(j, json_type_object) && end <= len && strspn(line + end, " \t\r") == len - end)
                ret = r->fn(r->host, (const struct tb_json *)(void *)j, r->file, r->ctx);
        json_object_put(j);
        r->stopped = ret;
        return ret;
}

/* A relative folder without ".", ".." or an empty part. */
static bool folder_valid(const char *f)
{
        if (!f || !*f || f[0] == '/' || strlen(f) > 1024)
                return false;
        for (const char *p = f; *p;) {
                size_t n = strcspn(p, "/");
                if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
                        return false;
                p += n + (p[n] == '/');
        }
        return f[strlen(f) - 1] != '/';
}

static bool needles_valid(const char *const needles[])
{
        size_t n = 0;
        for (const char *const *k = needles; k && *k; k++)
                if (!**k || strlen(*k) > LINES_NEEDLE_MAX || ++n > 16)
                        return false;
        return true;
}

/* Say where the counts come from: "~/FOLDER", each folder once. */
static void add_source(struct tokens_tally *t, const char *folder)
{
        char one[TOKENS_SOURCE_MAX];
        if ((size_t)snprintf(one, sizeof one, "~/%s", folder) >= sizeof one)
                return;
        size_t n = strlen(t->source);
        for (const char *p = t->source; (p = strstr(p, one)) != NULL; p++)
                if ((p == t->source || p[-1] == ' ') && (p[strlen(one)] == '\0' || p[strlen(one)] == ','))
                        return;
        if (n + strlen(one) + 2 < sizeof t->source)
                snprintf(t->source + n, sizeof t->source - n, "%s%s", n ? ", " : "", one);
}

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* Read one file found under `dirfd` as lines_read_fd does, within what is
 * left of the Trial's budget: 0, or what `fn` stopped with. A file that
 * cannot be read is left out, and the tokens are partial. */
static int read_one(struct tokens_tally *t, int dirfd, const struct newest_file *f, const char *const needles[],
                    unsigned flags, struct jsonl_read *r)
{
        _cleanup_close_ int fd = open_beneath(dirfd, f->path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_uid != t->owner) {
                /* Not what it was when found (nothing of the session runs any more). */
                tally_partial(t, "a file could not be opened");
                return 0;
        }
        if (t->bytes_left == 0) {
                tally_partial(t, "more than 512 MiB of files");
                return 0;
        }
        uint64_t max = min_u64(TOKENS_MAX_FILE_BYTES, t->bytes_left);
        const struct lines_limits lim = {
                .max_bytes = max,
                .max_line = TOKENS_MAX_LINE,
                .tail = flags & TB_JSONL_TAIL,
                .needles = needles,
        };
        struct lines_stats ls;
        int ret = lines_read_fd(fd, &lim, jsonl_line, r, &ls);
        t->bytes_left -= min_u64((uint64_t)st.st_size, max);
        if (ls.cut)
                tally_partial(t, max < TOKENS_MAX_FILE_BYTES ? "more than 512 MiB of files" : "a file over 128 MiB");
        if (ls.long_lines)
                tally_partial(t, "a line over 4 MiB");
        if (r->stopped)
                return r->stopped;
        if (ret < 0)
                tally_partial(t, "a file could not be read");
        return 0;
}

int tokens_read_jsonl(struct tokens_tally *t, struct tb_host *h, const char *folder, unsigned max_depth,
                      const char *suffix, const char *const needles[], unsigned flags, tb_jsonl_fn fn, void *ctx)
{
        if (!t)
                return -EPERM;
        if (!folder_valid(folder) || max_depth > TOKENS_MAX_DEPTH || (suffix && strchr(suffix, '/')) ||
            !needles_valid(needles) || !fn)
                return -EINVAL;
        int home = tokens_home_fd(t);
        if (home < 0)
                return home;
        add_source(t, folder);
        _cleanup_close_ int dirfd = open_beneath(home, folder, O_RDONLY | O_DIRECTORY | O_NONBLOCK);
        if (dirfd < 0)
                return 0; /* no such folder (or a link in its place): nothing written there */
        const struct newest_limits lim = {
                .suffix = suffix,
                .max_depth = max_depth,
                .max_files = TOKENS_MAX_FILES,
                .max_entries = TOKENS_MAX_ENTRIES,
                .owner = t->owner,
        };
        struct newest_file *files;
        size_t n;
        bool cut;
        int r = newest_files_at(dirfd, &lim, &files, &n, &cut);
        if (r < 0)
                return 0;
        if (cut)
                tally_partial(t, "more files than the newest 256, or more than 200000 entries to look at");
        struct jsonl_read rd = { .host = h, .fn = fn, .ctx = ctx, .tok = json_tokener_new_ex(TOKENS_JSON_DEPTH) };
        int ret = rd.tok ? 0 : -ENOMEM;
        for (size_t i = 0; i < n && ret == 0; i++) {
                rd.file = (unsigned)i;
                ret = read_one(t, dirfd, &files[i], needles, flags, &rd);
        }
        if (rd.tok)
                json_tokener_free(rd.tok);
        newest_files_free(files, n);
        return ret;
}

/* ---- a line's members ---- */

/* The member at the dotted `path`, or NULL. */
static json_object *member_at(const struct tb_json *line, const char *path)
{
        json_object *cur = (json_object *)(void *)line;
        if (!cur || !path)
                return NULL;
        char key[256];
        for (const char *p = path;; p++) {
                size_t n = strcspn(p, ".");
                if (n == 0 || n >= sizeof key || !json_object_is_type(cur, json_type_object))
                        return NULL;
                memcpy(key, p, n);
                key[n] = '\0';
                if (!json_object_object_get_ex(cur, key, &cur) || !cur)
                        return NULL;
                p += n;
                if (!*p)
                        return cur;
        }
}

int tokens_json_count(struct tokens_tally *t, const struct tb_json *line, const char *path, uint64_t *out)
{
        if (!t)
                return -EPERM;
        if (!out)
                return -EINVAL;
        json_object *v = member_at(line, path);
        if (!v)
                return -ENOENT;
        if (!json_object_is_type(v, json_type_int))
                return -EINVAL;
        /* json-c saturates what does not fit an int64: INT64_MAX is refused too. */
        int64_t n = json_object_get_int64(v);
        if (n < 0 || (uint64_t)n > TB_TOKENS_COUNT_MAX) {
                tally_partial(t, "a count below 0 or over 2^53 was refused");
                return -ERANGE;
        }
        *out = (uint64_t)n;
        return 0;
}

const char *tokens_json_string(const struct tokens_tally *t, const struct tb_json *line, const char *path)
{
        if (!t)
                return NULL;
        json_object *v = member_at(line, path);
        return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

/* ---- the tally ---- */

bool tokens_model_valid(const char *name)
{
        size_t n = name ? strlen(name) : 0;
        if (n == 0 || n > TOKENS_MODEL_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (name[i] < 0x21 || name[i] > 0x7e || name[i] == '"' || name[i] == '\\')
                        return false;
        return true;
}

static void tally_model(struct tokens_tally *t, const char *model)
{
        if (!tokens_model_valid(model))
                return;
        for (size_t i = 0; i < t->n_models; i++)
                if (strcmp(t->models[i], model) == 0)
                        return;
        if (t->n_models < TOKENS_MODELS_SEEN)
                snprintf(t->models[t->n_models++], sizeof t->models[0], "%s", model);
}

static uint64_t hash_key(const char *s)
{
        uint64_t h = 14695981039346656037ull; /* FNV-1a */
        for (; *s; s++)
                h = (h ^ (unsigned char)*s) * 1099511628211ull;
        return h;
}

static struct unit *slot_for(struct unit *slots, size_t cap, const char *key)
{
        size_t i = hash_key(key) & (cap - 1);
        while (slots[i].key && strcmp(slots[i].key, key) != 0)
                i = (i + 1) & (cap - 1);
        return &slots[i];
}

/* Room for one more unit: at most half full. */
static void tally_grow(struct tokens_tally *t)
{
        if ((t->n + 1) * 2 <= t->cap)
                return;
        size_t cap = t->cap ? t->cap * 2 : 64;
        struct unit *slots = xcalloc(cap, sizeof *slots);
        for (size_t i = 0; i < t->cap; i++)
                if (t->slots[i].key)
                        *slot_for(slots, cap, t->slots[i].key) = t->slots[i];
        free(t->slots);
        t->slots = slots;
        t->cap = cap;
}

int tokens_record(struct tokens_tally *t, const char *key, const struct tb_tokens *in)
{
        if (!t)
                return -EPERM;
        size_t klen = key ? strnlen(key, TOKENS_KEY_MAX + 1) : 0;
        if (klen == 0 || klen > TOKENS_KEY_MAX || !in ||
            in->size < offsetof(struct tb_tokens, model) + sizeof in->model)
                return -EINVAL;
        uint64_t v[T_N] = {
                in->input, in->cached_input, in->cache_write_input, in->output, in->reasoning, in->requests
        };
        for (int i = 0; i < T_N; i++)
                if (v[i] > TB_TOKENS_COUNT_MAX) {
                        tally_partial(t, "a count over 2^53 was refused");
                        return -ERANGE;
                }
        /* The parts fit what includes them. */
        if (v[T_CACHED] > v[T_INPUT])
                v[T_CACHED] = v[T_INPUT];
        if (v[T_CACHE_WRITE] > v[T_INPUT] - v[T_CACHED])
                v[T_CACHE_WRITE] = v[T_INPUT] - v[T_CACHED];
        if (v[T_REASONING] > v[T_OUTPUT])
                v[T_REASONING] = v[T_OUTPUT];
        struct unit *u = t->cap ? slot_for(t->slots, t->cap, key) : NULL;
        if (!u || !u->key) {
                if (t->n >= TOKENS_MAX_KEYS) {
                        tally_partial(t, "more than 65536 responses or sessions");
                        return -ENOSPC;
                }
                tally_grow(t);
                u = slot_for(t->slots, t->cap, key);
                u->key = xstrdup(key);
                t->n++;
        }
        memcpy(u->v, v, sizeof v);
        tally_model(t, in->model);
        return 0;
}

static int compare_names(const void *a, const void *b) { return strcmp(a, b); }

void tokens_tally_result(struct tokens_tally *t, struct trial_tokens *out, const char **why)
{
        if (why)
                *why = t->why;
        *out = (struct trial_tokens){ .known = t->n > 0, .partial = t->partial };
        if (!out->known)
                return;
        uint64_t sum[T_N] = { 0 };
        for (size_t i = 0; i < t->cap; i++)
                for (int k = 0; t->slots[i].key && k < T_N; k++) {
                        sum[k] += t->slots[i].v[k]; /* each <= 2^53: no wrap before the check */
                        if (sum[k] > TB_TOKENS_COUNT_MAX) {
                                sum[k] = TB_TOKENS_COUNT_MAX;
                                tally_partial(t, "a sum over 2^53 was saturated");
                                out->partial = true;
                        }
                }
        long long *dst[T_N] = { &out->input,  &out->cached_input, &out->cache_write_input,
                                &out->output, &out->reasoning,    &out->requests };
        for (int k = 0; k < T_N; k++)
                *dst[k] = (long long)sum[k];
        tb_qsort(t->models, t->n_models, sizeof t->models[0], compare_names);
        for (size_t i = 0; i < t->n_models; i++) {
                if (i < TOKENS_MAX_MODELS)
                        memcpy(out->models[out->n_models++], t->models[i], sizeof out->models[0]);
                else
                        out->models_more++;
        }
        snprintf(out->source, sizeof out->source, "%s", t->source);
}
