/* The guard's record: outcome.json's repo_guard, control_files and
 * special_files, bounded, and guard.jsonl, whole. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gitguard/guard_internal.h"
#include "gitguard/repo_guard.h"
#include <json-c/json.h>

/* ---- the record as JSON ---- */

static json_object *jstr(const char *s) { return s ? json_object_new_string(s) : NULL; }

/* The first REPO_GUARD_LIST_MAX of `n` items (of `total`) through `one`;
 * the rest counted in `more_key`. */
static void add_list(json_object *o, const char *key, const char *more_key, size_t n, size_t total,
                     json_object *(*one)(const void *list, size_t i), const void *list)
{
        json_object *a = json_object_new_array();
        size_t shown_n = 0;
        for (; shown_n < n && shown_n < REPO_GUARD_LIST_MAX; shown_n++)
                json_object_array_add(a, one(list, shown_n));
        json_object_object_add(o, key, a);
        json_object_object_add(o, more_key, json_object_new_int64((int64_t)(total - shown_n)));
}

static json_object *one_move(const void *list, size_t i)
{
        const struct guard_move *m = &((const struct guard_move *)list)[i];
        json_object *o = json_object_new_object();
        json_object_object_add(o, "path", jstr(m->path));
        json_object_object_add(o, "to", jstr(m->to));
        json_object_object_add(o, "why", jstr(m->why));
        return o;
}

static json_object *one_string(const void *list, size_t i) { return jstr(((char *const *)list)[i]); }

json_object *repo_guard_json(const struct repo_guard *g)
{
        if (g->status == GUARD_NONE)
                return NULL;
        json_object *o = json_object_new_object();
        json_object_object_add(o, "status", jstr(repo_guard_status_name(g->status)));
        json_object_object_add(o, "detail", g->detail[0] ? jstr(g->detail) : NULL);
        add_list(o, "moved", "moved_more", g->n_moved, g->total_moved, one_move, g->moved);
        add_list(o, "restored", "restored_more", g->restored.n, g->total_restored, one_string, g->restored.v);
        add_list(o, "setuid_cleared", "setuid_cleared_more", g->setuid_cleared.n, g->total_setuid,
                 one_string, g->setuid_cleared.v);
        json_object_object_add(o, "control_files_total", json_object_new_int64((int64_t)g->total_changes));
        json_object_object_add(o, "special_files_total", json_object_new_int64((int64_t)g->total_special));
        return o;
}

static json_object *one_change(const void *list, size_t i)
{
        const struct guard_change *c = &((const struct guard_change *)list)[i];
        json_object *o = json_object_new_object();
        json_object_object_add(o, "path", jstr(c->path));
        json_object_object_add(o, "change", jstr(c->change));
        json_object_object_add(o, "kept", json_object_new_boolean(c->kept));
        json_object_object_add(o, "host_config", json_object_new_boolean(c->host_config));
        json_object_object_add(o, "saved", jstr(c->saved));
        return o;
}

json_object *repo_guard_control_json(const struct repo_guard *g)
{
        if (g->status == GUARD_NONE)
                return NULL;
        json_object *a = json_object_new_array();
        for (size_t i = 0; i < g->n_changes && i < REPO_GUARD_LIST_MAX; i++)
                json_object_array_add(a, one_change(g->changes, i));
        return a;
}

static const char *type_name(unsigned char t)
{
        return t == DT_LNK ? "link" : t == DT_FIFO ? "fifo" : t == DT_SOCK ? "socket" : "device";
}

static json_object *one_special(const void *list, size_t i)
{
        const struct guard_seen *s = &((const struct guard_seen *)list)[i];
        json_object *o = json_object_new_object();
        _cleanup_free_ char *p = guard_shown(s->path);
        json_object_object_add(o, "path", jstr(p));
        json_object_object_add(o, "kind", jstr(type_name(s->type)));
        json_object_object_add(o, "target", jstr(s->data));
        return o;
}

json_object *repo_guard_special_json(const struct repo_guard *g)
{
        if (g->status == GUARD_NONE)
                return NULL;
        json_object *a = json_object_new_array();
        for (size_t i = 0; i < g->n_special && i < REPO_GUARD_LIST_MAX; i++)
                json_object_array_add(a, one_special(g->special, i));
        return a;
}

static void log_line(FILE *f, json_object *o)
{
        fprintf(f, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(o);
}

int repo_guard_write_log(const struct repo_guard *g, int dirfd, const char *name)
{
        if (g->status == GUARD_NONE)
                return 0;
        int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
        if (!f) {
                int e = -errno;
                if (fd >= 0)
                        close(fd);
                return e;
        }
        for (size_t i = 0; i < g->n_moved; i++) {
                json_object *o = one_move(g->moved, i);
                json_object_object_add(o, "action", json_object_new_string("moved"));
                log_line(f, o);
        }
        for (size_t i = 0; i < g->restored.n; i++) {
                json_object *o = json_object_new_object();
                json_object_object_add(o, "action", json_object_new_string("restored"));
                json_object_object_add(o, "path", jstr(g->restored.v[i]));
                log_line(f, o);
        }
        for (size_t i = 0; i < g->setuid_cleared.n; i++) {
                json_object *o = json_object_new_object();
                json_object_object_add(o, "action", json_object_new_string("setuid_cleared"));
                json_object_object_add(o, "path", jstr(g->setuid_cleared.v[i]));
                log_line(f, o);
        }
        for (size_t i = 0; i < g->n_changes; i++) {
                json_object *o = one_change(g->changes, i);
                json_object_object_add(o, "action", json_object_new_string("control_file"));
                log_line(f, o);
        }
        for (size_t i = 0; i < g->n_special; i++) {
                json_object *o = one_special(g->special, i);
                json_object_object_add(o, "action", json_object_new_string("special_file"));
                log_line(f, o);
        }
        const struct {
                const char *kind;
                size_t kept, total;
        } left[] = { { "moved", g->n_moved, g->total_moved },
                     { "restored", g->restored.n, g->total_restored },
                     { "setuid_cleared", g->setuid_cleared.n, g->total_setuid },
                     { "control_file", g->n_changes, g->total_changes },
                     { "special_file", g->n_special, g->total_special } };
        for (size_t i = 0; i < sizeof left / sizeof left[0]; i++) {
                if (left[i].total <= left[i].kept)
                        continue;
                json_object *o = json_object_new_object();
                json_object_object_add(o, "action", json_object_new_string("omitted"));
                json_object_object_add(o, "of", json_object_new_string(left[i].kind));
                json_object_object_add(o, "count", json_object_new_int64((int64_t)(left[i].total - left[i].kept)));
                log_line(f, o);
        }
        int r = fflush(f) == 0 ? 0 : -errno;
        fclose(f);
        return r;
}
