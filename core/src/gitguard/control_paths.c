/* Worktree control paths: those the host's own git config names, the
 * targets of its links, other tools' control files (gitguard/repo_guard.h,
 * step 3). */
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

#include "base/fileio.h"
#include "gitguard/gitconfig.h"
#include "gitguard/guard_internal.h"
#include "gitguard/repo_guard.h"
#include "gitguard/hostgit.h"
#include "gitguard/tool_files.h"

static char *config_path_abs(const char *value, const char *base, const char *home)
{
        if (value[0] == '/')
                return xstrdup(value);
        if (str_has_prefix(value, "~/"))
                return home ? xasprintf("%s/%s", home, value + 2) : NULL;
        return xasprintf("%s/%s", base, value);
}

/* `path` (absolute) with "." and ".." resolved lexically, as git does for
 * a config path, links not followed. malloc'd. */
static char *normalize(const char *path)
{
        struct strv parts = { 0 };
        _cleanup_free_ char *copy = xstrdup(path);
        char *save = NULL;
        for (char *p = strtok_r(copy, "/", &save); p; p = strtok_r(NULL, "/", &save)) {
                if (strcmp(p, ".") == 0)
                        continue;
                if (strcmp(p, "..") == 0) {
                        if (parts.n > 0) {
                                free(parts.v[--parts.n]);
                                parts.v[parts.n] = NULL;
                        }
                        continue;
                }
                strv_add(&parts, p);
        }
        struct strbuf sb = { 0 };
        strbuf_add(&sb, "");
        for (size_t i = 0; i < parts.n; i++)
                strbuf_addf(&sb, "/%s", parts.v[i]);
        strv_done(&parts);
        if (sb.len == 0)
                strbuf_add(&sb, "/");
        return sb.s;
}

/* Note `abs` as a worktree path the host's git reads when it lies inside
 * the repository (not in its git directory). */
static void add_host_path(struct repo_guard *g, const char *abs)
{
        _cleanup_free_ char *n = normalize(abs);
        if (!g->repo || !path_is_under(n, g->repo) || strcmp(n, g->repo) == 0 || (g->common && path_is_under(n, g->common)))
                return;
        const char *rel = n + strlen(g->repo) + 1;
        if (!strv_contains(&g->host_paths, rel))
                strv_add(&g->host_paths, rel);
}

/* The links among the git directory's control entries (a hooks folder, a
 * hook) that point into the worktree: the host's git follows them there. */
void guard_find_link_targets(struct repo_guard *g)
{
        for (size_t i = 0; i < g->snap.n; i++) {
                const struct snap_item *it = &g->snap.v[i];
                if (it->absent || !S_ISLNK(it->mode) || !it->data || !str_has_prefix(it->key, "git:"))
                        continue;
                _cleanup_free_ char *at = xasprintf("%s/%s", g->common, it->key + 4);
                _cleanup_free_ char *dir = path_dirname(at);
                _cleanup_free_ char *target = it->data[0] == '/' ? xstrdup(it->data) : xasprintf("%s/%s", dir, it->data);
                add_host_path(g, target);
        }
}

#define HOST_PATHS_REGEXP "^(core\\.hookspath|include\\.path|includeif\\..*\\.path)$"
/* As host_git_run keeps it: what is longer is not read at all. */
#define HOST_PATHS_MAX 65536

/* What git prints for the host paths of the config files `names` (in
 * `dirfd`, in git's order of reading them), read here: 0 with the lines
 * added to `out`, or -EOPNOTSUPP when git must read them (gitconfig.h). A
 * file that is not there says nothing, as for git. */
static int host_paths_from_files(int dirfd, const char *const *names, size_t n, struct strbuf *out)
{
        for (size_t i = 0; i < n; i++) {
                /* Links followed, as git does; never blocking on a FIFO. */
                size_t len = 0;
                _cleanup_free_ char *text = NULL;
                int r = read_full_file_at(dirfd, names[i], 1u << 20, READ_REGULAR | READ_NONBLOCK, &text, &len, NULL);
                if (r == -ENOENT || r == -ENOTDIR)
                        continue;
                if (r < 0 || gitconfig_host_paths(text, len, out) < 0)
                        return -EOPNOTSUPP;
        }
        return 0;
}

/* The host-path lines of the repository's config (`repo_config`) or, when
 * that is NULL, of the host user's global one: read here when gitconfig.c
 * can, else by one run of git (as `git config --file F` or `--global`
 * with `--get-regexp` HOST_PATHS_REGEXP). malloc'd, or NULL for none. */
static char *host_paths_lines(const char *git, const char *repo_config, const char *host_home)
{
        struct strbuf sb = { 0 };
        int r;
        if (repo_config) {
                r = host_paths_from_files(AT_FDCWD, &repo_config, 1, &sb);
        } else {
                _cleanup_close_ int home_fd = host_home ? open(host_home, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
                if (home_fd < 0 && (!host_home || errno == ENOENT || errno == ENOTDIR))
                        r = 0; /* no home, no global config */
                else
                        r = home_fd < 0 ? -EOPNOTSUPP : host_paths_from_files(home_fd, host_git_global_files, 2, &sb);
        }
        if (r == 0 && sb.len < HOST_PATHS_MAX)
                return sb.s;
        free(sb.s);
        if (r == 0)
                return NULL;
        char *out = xmalloc(HOST_PATHS_MAX);
        const char *const args_file[] = { "config", "--file", repo_config, "--get-regexp", HOST_PATHS_REGEXP, NULL };
        const char *const args_global[] = { "config", "--global", "--get-regexp", HOST_PATHS_REGEXP, NULL };
        if (host_git_run(git, repo_config ? NULL : host_home, repo_config ? args_file : args_global, out,
                         HOST_PATHS_MAX, NULL))
                return out;
        free(out);
        return NULL;
}

/* The worktree paths the host's own git config names as a hooks folder or
 * a config to include (husky's `core.hooksPath = .husky`, a shared
 * `include.path = ../team.gitconfig`): the session could write git code
 * there. From the repository's config and the host user's global one, as
 * before the session. Lexically inside the repository, not in its .git. */
void guard_find_host_paths(struct repo_guard *g, const struct repo_guard_host *host)
{
        _cleanup_free_ char *git = host->path ? find_on_path("git", host->path) : NULL;
        if (!git)
                return;
        _cleanup_free_ char *repo_config = g->common ? xasprintf("%s/config", g->common) : NULL;
        for (size_t i = 0; i < 2; i++) {
                if (i == 0 && !repo_config)
                        continue;
                _cleanup_free_ char *out = host_paths_lines(git, i == 0 ? repo_config : NULL, host->host_home);
                char *save = NULL;
                for (char *line = out ? strtok_r(out, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save)) {
                        char *value = strchr(line, ' ');
                        if (!value || !*++value)
                                continue;
                        bool hooks = str_has_prefix(line, "core.hookspath ");
                        const char *base = hooks ? g->repo : i == 0 && g->common ? g->common : host->host_home;
                        _cleanup_free_ char *abs = base ? config_path_abs(value, base, host->host_home) : NULL;
                        if (abs)
                                add_host_path(g, abs);
                }
        }
}

/* Open the folder `rel`'s parent below the repository, never through a
 * link; *leaf points into rel. An fd or -1 with errno. */
static int open_parent_rel(int repo_fd, const char *rel, const char **leaf)
{
        int fd = fcntl(repo_fd, F_DUPFD_CLOEXEC, 3);
        const char *p = rel;
        for (const char *slash; fd >= 0 && (slash = strchr(p, '/')); p = slash + 1) {
                _cleanup_free_ char *part = strndup(p, (size_t)(slash - p));
                int next = guard_open_dir_at(fd, part);
                int e = errno;
                close(fd);
                fd = next;
                errno = e;
        }
        *leaf = p;
        return fd;
}

/* Snapshot a worktree control path (`kind`: "host:" or "tool:"). */
int guard_snap_path(struct repo_guard *g, const char *kind, const char *rel)
{
        _cleanup_free_ char *key = xasprintf("%s%s", kind, rel);
        if (!strchr(rel, '/')) /* in the repository's own folder: no folder of its own to open */
                return snapshot_add(&g->snap, g->repo_fd, rel, key);
        const char *leaf;
        _cleanup_close_ int pfd = open_parent_rel(g->repo_fd, rel, &leaf);
        if (pfd < 0) { /* a part missing (or not a folder): absent */
                GREEDY_REALLOC(g->snap.v, g->snap.cap, g->snap.n + 1);
                g->snap.v[g->snap.n++] = (struct snap_item){ .key = xstrdup(key), .absent = true };
                g->snap.sorted = false;
                return 0;
        }
        return snapshot_add(&g->snap, pfd, leaf, key);
}

/* The other tools' control files: each row's path, or its folder's
 * matching entries. */
int guard_snap_tool_files(struct repo_guard *g)
{
        size_t n;
        const struct tool_file *t = tool_files(&n);
        int r = 0;
        for (size_t i = 0; r == 0 && i < n; i++) {
                if (!t[i].prefix) {
                        strv_add(&g->tool_paths, t[i].path);
                        r = guard_snap_path(g, "tool:", t[i].path);
                        continue;
                }
                _cleanup_close_ int fd = guard_open_dir_at(g->repo_fd, t[i].path);
                _cleanup_strv_ struct strv names = { 0 };
                if (fd >= 0)
                        guard_list_names(fd, &names);
                for (size_t j = 0; r == 0 && j < names.n; j++) {
                        size_t a = strlen(names.v[j]), b = strlen(t[i].suffix);
                        if (!str_has_prefix(names.v[j], t[i].prefix) || a < b || strcmp(names.v[j] + a - b, t[i].suffix) != 0)
                                continue;
                        _cleanup_free_ char *rel = xasprintf("%s/%s", t[i].path, names.v[j]);
                        strv_add(&g->tool_paths, rel);
                        r = guard_snap_path(g, "tool:", rel);
                }
        }
        return r;
}

/* ---- after the session: other tools' control files and the host's paths ---- */

/* At most this many names of the repository's own folder are listed once
 * to spare a look at each control path (root_names); past it, each is
 * looked at on its own. */
#define ROOT_NAMES_MAX 4096

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The names in the repository's own folder now, sorted, into *out: after
 * the session, when nothing of it runs any more, a control path that was
 * absent before and whose first part is not among them is absent still,
 * and needs no look of its own (some 30 lookups of names that are not
 * there, on the path of every Trial's end). false (*out empty) when the
 * folder cannot be listed or holds more than ROOT_NAMES_MAX names. */
static bool root_names(const struct repo_guard *g, struct strv *out)
{
        if (guard_list_names(g->repo_fd, out) < 0 || out->n > ROOT_NAMES_MAX) {
                strv_done(out);
                return false;
        }
        if (out->n > 1)
                qsort(out->v, out->n, sizeof *out->v, cmp_name);
        return true;
}

/* Is `rel`'s first part among `root`'s names? */
static bool root_holds(const struct strv *root, const char *rel)
{
        if (root->n == 0)
                return false;
        _cleanup_free_ char *first = strndup(rel, strcspn(rel, "/"));
        return bsearch(&first, root->v, root->n, sizeof *root->v, cmp_name) != NULL;
}

/* The worktree control path `rel` (snapshot key `key`): a change listed,
 * and with `revert` the session's version moved out and the one before put
 * back. A folder on the way that the session replaced (by a link, a file)
 * is moved out too, and made again, when reverting. */
static int fix_path(struct repo_guard *g, const char *rel, const char *key, bool revert, bool host,
                    const struct strv *root)
{
        bool existed = snapshot_existed(&g->snap, key);
        if (!existed && root && !root_holds(root, rel))
                return 0;               /* not there, and was not */
        _cleanup_close_ int owned = -1; /* each folder below the repository's; that one is borrowed */
        int fd = g->repo_fd;
        const char *p = rel;
        for (const char *slash; fd >= 0 && (slash = strchr(p, '/')); p = slash + 1) {
                _cleanup_free_ char *part = strndup(p, (size_t)(slash - p));
                _cleanup_free_ char *upto = strndup(rel, (size_t)(slash - rel));
                int next = guard_open_dir_at(fd, part);
                if (next < 0 && guard_exists_at(fd, part)) { /* replaced by what is not a folder */
                        if (!revert) {
                                guard_note_change(g, rel, existed ? "changed" : "new", true, host, NULL);
                                return 0;
                        }
                        int r = guard_move_out(g, fd, part, upto, "replaced a folder above a control file");
                        if (r < 0)
                                return r;
                }
                if (next < 0 && existed) {
                        if (mkdirat(fd, part, 0755) < 0 && errno != EEXIST)
                                return guard_note_failure(g, -errno, "cannot make '%s'", upto);
                        next = guard_open_dir_at(fd, part);
                }
                if (owned >= 0)
                        close(owned);
                fd = owned = next;
        }
        if (fd < 0) /* not there, and was not */
                return existed ? guard_note_failure(g, -errno, "cannot reach '%s'", rel) : 0;
        if (snapshot_same(&g->snap, fd, p, key))
                return 0;
        bool present = guard_exists_at(fd, p);
        const char *change = !existed ? "new" : present ? "changed" : "removed";
        char *saved = NULL;
        if (revert && present) {
                int r = quarantine_move(&g->q, fd, p, &saved);
                if (r < 0)
                        return guard_note_failure(g, r, "cannot move '%s' out of the repository", rel);
        }
        if (revert && existed) {
                int r = snapshot_restore(&g->snap, fd, p, key);
                if (r < 0) {
                        free(saved);
                        return guard_note_failure(g, r, "cannot put '%s' back as it was before the session", rel);
                }
        }
        guard_note_change(g, rel, change, !revert, host, saved);
        return 0;
}

int guard_fix_paths(struct repo_guard *g)
{
        int r = 0;
        _cleanup_strv_ struct strv listed = { 0 };
        const struct strv *root = root_names(g, &listed) ? &listed : NULL;
        for (size_t i = 0; r == 0 && i < g->host_paths.n; i++) {
                _cleanup_free_ char *key = xasprintf("host:%s", g->host_paths.v[i]);
                r = fix_path(g, g->host_paths.v[i], key, true, true, root);
        }
        /* New entries of the folders whose matching entries are control files. */
        size_t n;
        const struct tool_file *t = tool_files(&n);
        for (size_t i = 0; i < n; i++) {
                if (!t[i].prefix || (root && !root_holds(root, t[i].path)))
                        continue;
                _cleanup_close_ int fd = guard_open_dir_at(g->repo_fd, t[i].path);
                _cleanup_strv_ struct strv names = { 0 };
                if (fd >= 0)
                        guard_list_names(fd, &names);
                for (size_t j = 0; j < names.n; j++) {
                        size_t a = strlen(names.v[j]), b = strlen(t[i].suffix);
                        if (!str_has_prefix(names.v[j], t[i].prefix) || a < b || strcmp(names.v[j] + a - b, t[i].suffix) != 0)
                                continue;
                        _cleanup_free_ char *rel = xasprintf("%s/%s", t[i].path, names.v[j]);
                        if (!strv_contains(&g->tool_paths, rel))
                                strv_add(&g->tool_paths, rel);
                }
        }
        for (size_t i = 0; r == 0 && i < g->tool_paths.n; i++) {
                if (strv_contains(&g->host_paths, g->tool_paths.v[i]))
                        continue;
                _cleanup_free_ char *key = xasprintf("tool:%s", g->tool_paths.v[i]);
                r = fix_path(g, g->tool_paths.v[i], key, !g->keep_control_files, false, root);
        }
        return r;
}
