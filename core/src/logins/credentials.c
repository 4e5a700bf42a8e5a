#define _GNU_SOURCE
#include "logins/credentials.h"

#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/env.h"
#include "base/error.h"
#include "base/fileio.h"
#include "base/macro.h"
#include "base/path.h"
#include "base/strv.h"
#include "base/utf8.h"

struct credential {
        char *key;
        char *value; /* a secret: zeroed before free */
};

struct credentials_section {
        char *name;
        struct credential *entries;
        size_t n, cap;
};

struct credentials {
        struct credentials_section *sections;
        size_t n, cap;
        bool loose;
};

static void section_done(struct credentials_section *s)
{
        for (size_t i = 0; i < s->n; i++) {
                free(s->entries[i].key);
                erase_and_free(s->entries[i].value);
        }
        free(s->entries);
        free(s->name);
        memset(s, 0, sizeof *s);
}

void credentials_free(struct credentials *c)
{
        if (!c)
                return;
        for (size_t i = 0; i < c->n; i++)
                section_done(&c->sections[i]);
        free(c->sections);
        free(c);
}

struct credentials *credentials_new(void) { return xcalloc(1, sizeof(struct credentials)); }

bool credentials_loose_mode(const struct credentials *c) { return c->loose; }

/* ---- names ---- */

static bool name_valid(const char *name, bool upper_ok)
{
        if (!*name)
                return false;
        for (const char *p = name; *p; p++) {
                char ch = *p;
                if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-')
                        continue;
                if (upper_ok && ch >= 'A' && ch <= 'Z')
                        continue;
                return false;
        }
        return true;
}

bool credentials_section_name_valid(const char *name) { return name_valid(name, false); }
bool credentials_key_name_valid(const char *name) { return name_valid(name, true); }

int credentials_parse_key(const char *dotted, char **section, char **key)
{
        const char *dot = strchr(dotted, '.');
        if (!dot)
                return -EINVAL;
        _cleanup_free_ char *s = strndup(dotted, (size_t)(dot - dotted));
        if (!s)
                return -ENOMEM;
        if (!credentials_section_name_valid(s) || !credentials_key_name_valid(dot + 1))
                return -EINVAL;
        *key = xstrdup(dot + 1);
        *section = TAKE_PTR(s);
        return 0;
}

/* A name read from the file, made safe to quote in a one-line message. */
static char *printable_name(const char *name)
{
        size_t n = strnlen(name, 64);
        char *out = xmalloc(n + 4);
        for (size_t i = 0; i < n; i++) {
                unsigned char ch = (unsigned char)name[i];
                out[i] = ch >= 0x20 && ch < 0x7f && ch != '\'' ? (char)ch : '?';
        }
        memcpy(out + n, name[n] ? "..." : "", name[n] ? 4 : 1);
        return out;
}

/* ---- the set itself ---- */

static struct credentials_section *section_find(const struct credentials *c, const char *name, size_t *idx)
{
        for (size_t i = 0; i < c->n; i++) {
                if (strcmp(c->sections[i].name, name) == 0) {
                        if (idx)
                                *idx = i;
                        return &c->sections[i];
                }
        }
        return NULL;
}

static struct credential *entry_find(const struct credentials_section *s, const char *key, size_t *idx)
{
        for (size_t i = 0; i < s->n; i++) {
                if (strcmp(s->entries[i].key, key) == 0) {
                        if (idx)
                                *idx = i;
                        return &s->entries[i];
                }
        }
        return NULL;
}

const char *credentials_get(const struct credentials *c, const char *section, const char *key)
{
        const struct credentials_section *s = section_find(c, section, NULL);
        const struct credential *e = s ? entry_find(s, key, NULL) : NULL;
        return e ? e->value : NULL;
}

/* Takes ownership of `value`. Names must be valid. */
static void set_take(struct credentials *c, const char *section, const char *key, char *value)
{
        struct credentials_section *s = section_find(c, section, NULL);
        if (!s) {
                GREEDY_REALLOC(c->sections, c->cap, c->n + 1);
                s = &c->sections[c->n++];
                memset(s, 0, sizeof *s);
                s->name = xstrdup(section);
        }
        struct credential *e = entry_find(s, key, NULL);
        if (e) {
                erase_and_free(e->value);
                e->value = value;
                return;
        }
        /* The entries hold only pointers: moving them by realloc copies no secret. */
        GREEDY_REALLOC(s->entries, s->cap, s->n + 1);
        s->entries[s->n++] = (struct credential){ .key = xstrdup(key), .value = value };
}

int credentials_set(struct credentials *c, const char *section, const char *key, const char *value)
{
        if (!credentials_section_name_valid(section) || !credentials_key_name_valid(key))
                return -EINVAL;
        if (!*value || !utf8_is_valid(value, strlen(value)))
                return -EINVAL;
        set_take(c, section, key, xstrdup(value));
        return 0;
}

int credentials_unset(struct credentials *c, const char *section, const char *key)
{
        size_t si, ei;
        struct credentials_section *s = section_find(c, section, &si);
        if (!s || !entry_find(s, key, &ei))
                return -ENOENT;
        free(s->entries[ei].key);
        erase_and_free(s->entries[ei].value);
        memmove(&s->entries[ei], &s->entries[ei + 1], (s->n - ei - 1) * sizeof *s->entries);
        s->n--;
        if (s->n == 0) {
                section_done(s);
                memmove(&c->sections[si], &c->sections[si + 1], (c->n - si - 1) * sizeof *c->sections);
                c->n--;
        }
        return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

void credentials_names(const struct credentials *c, struct strv *out)
{
        size_t first = out->n;
        for (size_t i = 0; i < c->n; i++)
                for (size_t k = 0; k < c->sections[i].n; k++)
                        strv_addf(out, "%s.%s", c->sections[i].name, c->sections[i].entries[k].key);
        if (out->n > first)
                tb_qsort(out->v + first, out->n - first, sizeof *out->v, cmp_str);
}

/* ---- the default path ---- */

static char *join_trimmed(const char *dir, const char *rest)
{
        size_t n = strlen(dir);
        while (n > 1 && dir[n - 1] == '/')
                n--;
        if (n == 1 && dir[0] == '/')
                n = 0;
        return xasprintf("%.*s%s", (int)n, dir, rest);
}

int credentials_default_path(const struct tb_env *env, char **out)
{
        if (!env)
                return -ENOENT;
        const char *xdg = env->xdg_config_home;
        if (xdg && xdg[0] == '/') {
                *out = join_trimmed(xdg, "/trialbox/credentials.json");
                return 0;
        }
        if (!env->home)
                return -ENOENT;
        *out = join_trimmed(env->home, "/.config/trialbox/credentials.json");
        return 0;
}

/* ---- loading ---- */

/* Read the whole file into *buf (release with erase_and_free()). 1 when
 * the file does not exist. */
static int read_secret_file(const char *path, char **buf, size_t *len, struct stat *st, struct tb_error *err)
{
        int r = read_file_secure(path, CREDENTIALS_MAX_SIZE, buf, len, st);
        switch (r) {
        case 0:
                return 0;
        case -ENOENT:
                return 1;
        case -ELOOP:
                return tb_fail(err, r,
                               "credentials '%s' is a symbolic link; trialbox does not follow it: "
                               "replace it with the file itself or give --credentials FILE",
                               path);
        case -EISDIR:
                return tb_fail(err, r, "credentials '%s' is a folder; give the path of a JSON file", path);
        case -EINVAL:
                return tb_fail(err, r, "credentials '%s' is not a regular file; give the path of a JSON file", path);
        case -EFBIG:
                return tb_fail(err, r, "credentials '%s' is larger than 1 MiB; fix or remove the file", path);
        default:
                return tb_fail(err, r, "cannot open credentials '%s': %s; check the path and its permissions", path,
                               strerror(-r));
        }
}

/* Line and column (both from 1; the column counts characters, not bytes) of byte `off`. */
static void text_position(const char *buf, size_t off, unsigned long *line, unsigned long *col)
{
        *line = 1;
        *col = 1;
        for (size_t i = 0; i < off; i++) {
                if (buf[i] == '\n') {
                        (*line)++;
                        *col = 1;
                } else if (((unsigned char)buf[i] & 0xc0) != 0x80) {
                        (*col)++;
                }
        }
}

/* json-c keeps parsed strings in its own objects; zero them before they go. */
static void json_zero_strings(struct json_object *o)
{
        switch (json_object_get_type(o)) {
        case json_type_string:
                /* The text belongs to the object and lives as long as it; writing
                 * to it only wipes it before json_object_put() frees it. */
                explicit_bzero((char *)json_object_get_string(o), (size_t)json_object_get_string_len(o));
                break;
        case json_type_object: {
                json_object_object_foreach(o, k, v) {
                        (void)k;
                        json_zero_strings(v);
                }
                break;
        }
        case json_type_array:
                for (size_t i = 0; i < json_object_array_length(o); i++)
                        json_zero_strings(json_object_array_get_idx(o, i));
                break;
        default:
                break;
        }
}

static int from_json(struct credentials *c, struct json_object *root, const char *path, struct tb_error *err)
{
        if (!json_object_is_type(root, json_type_object))
                return tb_fail(err, -EINVAL, "credentials '%s': the top level must be a JSON object; fix or remove the file",
                               path);
        json_object_object_foreach(root, section, sobj) {
                if (!credentials_section_name_valid(section)) {
                        _cleanup_free_ char *shown = printable_name(section);
                        return tb_fail(err, -EINVAL,
                                       "credentials '%s': section name '%s' is invalid (use a-z, 0-9, '_' and '-'); "
                                       "fix the file",
                                       path, shown);
                }
                if (!json_object_is_type(sobj, json_type_object))
                        return tb_fail(err, -EINVAL, "credentials '%s': '%s' must be an object of strings; fix the file",
                                       path, section);
                json_object_object_foreach(sobj, key, val) {
                        if (!credentials_key_name_valid(key)) {
                                _cleanup_free_ char *shown = printable_name(key);
                                return tb_fail(err, -EINVAL,
                                               "credentials '%s': key name '%s.%s' is invalid (use A-Z, a-z, 0-9, "
                                               "'_' and '-'); fix the file",
                                               path, section, shown);
                        }
                        if (!json_object_is_type(val, json_type_string))
                                return tb_fail(err, -EINVAL, "credentials '%s': '%s.%s' must be a string; fix the file",
                                               path, section, key);
                        const char *s = json_object_get_string(val);
                        size_t n = (size_t)json_object_get_string_len(val);
                        if (strlen(s) != n)
                                return tb_fail(err, -EINVAL,
                                               "credentials '%s': '%s.%s' contains a NUL character (\\u0000); "
                                               "fix the file",
                                               path, section, key);
                        set_take(c, section, key, xstrdup(s));
                }
        }
        return 0;
}

/* Parse `len` bytes of `text` (no terminator needed) into the empty `c`. */
static int parse_into(const char *text, size_t len, const char *path, struct credentials *c, struct tb_error *err)
{
        struct json_tokener *tok = json_tokener_new();
        if (!tok)
                return tb_fail(err, -ENOMEM, "cannot parse credentials '%s': out of memory", path);
        /* Trailing data is checked below, to say so plainly. */
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS |
                                            JSON_TOKENER_VALIDATE_UTF8);
        struct json_object *root = json_tokener_parse_ex(tok, text, (int)len);
        enum json_tokener_error jerr = json_tokener_get_error(tok);
        size_t end = json_tokener_get_parse_end(tok);
        json_tokener_free(tok);

        int r = 0;
        unsigned long line, col;
        if (jerr != json_tokener_success || !root) {
                /* All the input was given: "continue" means it ended too soon. */
                if (jerr == json_tokener_continue) {
                        jerr = json_tokener_error_parse_eof;
                        end = len;
                }
                text_position(text, end, &line, &col);
                r = tb_fail(err, -EINVAL, "credentials '%s': invalid JSON at line %lu, column %lu: %s; fix or remove the file",
                            path, line, col, json_tokener_error_desc(jerr));
                goto out;
        }
        /* Bounded by `len`, not by a terminator; a NUL byte is data, not whitespace. */
        size_t rest = end;
        while (rest < len && (text[rest] == ' ' || text[rest] == '\t' || text[rest] == '\r' || text[rest] == '\n'))
                rest++;
        if (rest < len) {
                text_position(text, rest, &line, &col);
                r = tb_fail(err, -EINVAL,
                            "credentials '%s': invalid JSON at line %lu, column %lu: unexpected data after the "
                            "top-level object; fix or remove the file",
                            path, line, col);
                goto out;
        }
        r = from_json(c, root, path, err);
out:
        if (root) {
                json_zero_strings(root);
                json_object_put(root);
        }
        return r;
}

int credentials_parse(const char *text, size_t len, const char *path, struct credentials **out,
                      struct tb_error *err)
{
        /* Also keeps `len` within json-c's int. */
        if (len > CREDENTIALS_MAX_SIZE)
                return tb_fail(err, -EFBIG, "credentials '%s' is larger than 1 MiB; fix or remove the file", path);
        _cleanup_credentials_ struct credentials *c = credentials_new();
        int r = parse_into(text, len, path, c, err);
        if (r < 0)
                return r;
        *out = TAKE_PTR(c);
        return 0;
}

int credentials_load(const char *path, struct credentials **out, struct tb_error *err)
{
        _cleanup_erase_ char *buf = NULL;
        size_t len = 0;
        struct stat st;

        int r = read_secret_file(path, &buf, &len, &st, err);
        if (r < 0)
                return r;
        if (r == 1) {
                *out = credentials_new();
                return 0;
        }
        if (!buf) /* not reached: read_secret_file sets it on success (for the analyser) */
                return -EIO;
        struct credentials *c = NULL;
        r = credentials_parse(buf, len, path, &c, err);
        if (r < 0)
                return r;
        c->loose = (st.st_mode & 077) != 0;
        *out = c;
        return 0;
}

/* ---- saving ---- */

/* Output counted first (p == NULL), then written into one exact allocation. */
struct outbuf {
        char *p;
        size_t len;
};

static void emit(struct outbuf *o, const char *s, size_t n)
{
        if (o->p)
                memcpy(o->p + o->len, s, n);
        o->len += n;
}

static void emit_str(struct outbuf *o, const char *s) { emit(o, s, strlen(s)); }

static void emit_json_string(struct outbuf *o, const char *s)
{
        emit(o, "\"", 1);
        for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
                switch (*p) {
                case '"':
                        emit(o, "\\\"", 2);
                        break;
                case '\\':
                        emit(o, "\\\\", 2);
                        break;
                case '\n':
                        emit(o, "\\n", 2);
                        break;
                case '\r':
                        emit(o, "\\r", 2);
                        break;
                case '\t':
                        emit(o, "\\t", 2);
                        break;
                case '\b':
                        emit(o, "\\b", 2);
                        break;
                case '\f':
                        emit(o, "\\f", 2);
                        break;
                default:
                        if (*p < 0x20 || *p == 0x7f) {
                                char esc[8];
                                snprintf(esc, sizeof esc, "\\u%04x", *p);
                                emit(o, esc, 6);
                        } else {
                                emit(o, (const char *)p, 1);
                        }
                }
        }
        emit(o, "\"", 1);
}

static void serialize(const struct credentials *c, struct outbuf *o)
{
        if (c->n == 0) {
                emit_str(o, "{}\n");
                return;
        }
        emit_str(o, "{\n");
        for (size_t i = 0; i < c->n; i++) {
                const struct credentials_section *s = &c->sections[i];
                emit_str(o, "  ");
                emit_json_string(o, s->name);
                emit_str(o, ": {\n");
                for (size_t k = 0; k < s->n; k++) {
                        emit_str(o, "    ");
                        emit_json_string(o, s->entries[k].key);
                        emit_str(o, ": ");
                        emit_json_string(o, s->entries[k].value);
                        emit_str(o, k + 1 < s->n ? ",\n" : "\n");
                }
                emit_str(o, i + 1 < c->n ? "  },\n" : "  }\n");
        }
        emit_str(o, "}\n");
}

int credentials_save(const struct credentials *c, const char *path, struct tb_error *err)
{
        const char *slash = strrchr(path, '/');
        const char *base = slash ? slash + 1 : path;
        _cleanup_free_ char *dir = NULL;
        _cleanup_close_ int dirfd = -1;
        struct stat st;
        int r;

        if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
                return tb_fail(err, -EISDIR, "credentials '%s' is not a file name; give the path of a JSON file", path);
        dir = !slash ? xstrdup(".") : slash == path ? xstrdup("/") : strndup(path, (size_t)(slash - path));
        if (!dir)
                return tb_fail(err, -ENOMEM, "cannot save credentials '%s': out of memory", path);

        r = mkdir_p(dir, 0700);
        if (r < 0)
                return tb_fail(err, r, "cannot create the folder '%s' for credentials: %s; check its parent's permissions",
                               dir, strerror(-r));
        dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0) {
                r = -errno;
                return tb_fail(err, r, "cannot open the folder '%s' for credentials: %s; check its permissions", dir,
                               strerror(-r));
        }
        if (fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                /* The rename would replace the link, not its target: refuse
                 * rather than silently break the user's setup. */
                if (S_ISLNK(st.st_mode))
                        return tb_fail(err, -ELOOP,
                                       "credentials '%s' is a symbolic link; trialbox does not write through it: "
                                       "replace it with the file itself or give --credentials FILE",
                                       path);
                if (S_ISDIR(st.st_mode))
                        return tb_fail(err, -EISDIR, "credentials '%s' is a folder; give the path of a JSON file", path);
                if (!S_ISREG(st.st_mode))
                        return tb_fail(err, -EINVAL,
                                       "credentials '%s' is not a regular file; give the path of a JSON file", path);
        } else if (errno != ENOENT) {
                r = -errno;
                return tb_fail(err, r, "cannot save credentials '%s': %s", path, strerror(-r));
        }

        struct outbuf o = { 0 };
        serialize(c, &o);
        size_t need = o.len;
        o.p = xmalloc(need);
        o.len = 0;
        serialize(c, &o);
        r = write_file_atomic_at(dirfd, base, o.p, o.len, 0600, WRITE_SYNC_FILE | WRITE_SYNC_DIR);
        erase_and_free(o.p);
        if (r < 0)
                return tb_fail(err, r, "cannot save credentials '%s': %s; check the folder's permissions and free space",
                               path, strerror(-r));
        return 0;
}
