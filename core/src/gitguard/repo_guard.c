#define _GNU_SOURCE
#include "gitguard/repo_guard.h"

#include <dirent.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/tree.h"
#include "gitguard/gitdata.h"
#include "gitguard/hostgit.h"
#include "gitguard/tool_files.h"

/* The longest path a record shows: a longer one keeps its tail. */
#define SHOWN_MAX 200
/* The largest ref file, pseudo-ref or message git writes; packed-refs. */
#define REF_MAX 4096
#define TEXT_MAX ((size_t)1 << 20)
#define PACKED_REFS_MAX ((size_t)256 << 20)
/* Submodules nest (modules/a/modules/b) and their names may hold '/'. */
#define MODULES_MAX_DEPTH 32

/* ---- reading ---- */

/* The regular file `name` in `dirfd`, never following a link or blocking on
 * a FIFO, up to `max` bytes: malloc'd (NUL-terminated), or NULL with errno
 * (EFBIG when larger, EINVAL when not a regular file). */
static char *read_at(int dirfd, const char *name, size_t max, size_t *len_out, mode_t *mode_out)
{
        struct stat st;
        char *buf = read_file_at(dirfd, name, max, len_out, &st);
        if (buf && mode_out)
                *mode_out = st.st_mode & 07777;
        return buf;
}

/* The first line of a small file, trimmed. */
static char *read_line_at(int dirfd, const char *name)
{
        char *s = read_at(dirfd, name, 4096, NULL, NULL);
        if (s)
                s[strcspn(s, "\r\n")] = '\0';
        return s;
}

static bool is_dir_at(int dirfd, const char *name)
{
        struct stat st;
        return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

static bool is_reg_at(int dirfd, const char *name)
{
        struct stat st;
        return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

static bool exists_at(int dirfd, const char *name)
{
        struct stat st;
        return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static int open_dir_at(int dirfd, const char *name)
{
        return openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
}

/* The names in the folder open at `fd` (not "." and ".."), in `out`. */
static int list_names(int fd, struct strv *out)
{
        int dup_fd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = dup_fd < 0 ? NULL : fdopendir(dup_fd);
        if (!d) {
                if (dup_fd >= 0)
                        close(dup_fd);
                return -errno;
        }
        for (struct dirent *e; (errno = 0, e = readdir(d));)
                if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                        strv_add(out, e->d_name);
        int r = errno ? -errno : 0;
        closedir(d);
        return r;
}

/* `s` shown in a record: at most SHOWN_MAX bytes, its tail kept. */
static char *shown(const char *s)
{
        size_t n = strlen(s);
        return n <= SHOWN_MAX ? xstrdup(s) : xasprintf(".../%s", s + n - SHOWN_MAX);
}

/* ---- the worktree's common directory ---- */

static bool is_git_dir(const char *dir)
{
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
        return fd >= 0 && is_reg_at(fd, "HEAD") && is_dir_at(fd, "objects") && is_dir_at(fd, "refs");
}

/* Folders a repository-derived bind may never be in (or be). */
static bool is_system_path(const char *p)
{
        static const char *const under[] = { "/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
                                             "/boot", "/proc", "/sys", "/dev", "/run" };
        static const char *const exactly[] = { "/", "/var", "/opt", "/srv", "/home", "/root", "/tmp",
                                               "/var/tmp", "/mnt", "/media" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(under); i++)
                if (path_is_under(p, under[i]))
                        return true;
        for (size_t i = 0; i < TB_ARRAY_SIZE(exactly); i++)
                if (strcmp(p, exactly[i]) == 0)
                        return true;
        return path_is_under(p, "/var") && !path_is_under(p, "/var/tmp");
}

static const char *overlapped_ro_bind(const struct sandbox_spec *spec, const char *p)
{
        for (size_t i = 0; spec && i < spec->n_ops; i++) {
                const struct sandbox_op *op = &spec->ops[i];
                if ((op->kind == SANDBOX_RO_BIND || op->kind == SANDBOX_SYMLINK) &&
                    (path_is_under(p, op->dest) || path_is_under(op->dest, p)))
                        return op->dest;
        }
        return NULL;
}

/* Why the common directory `c` may not be bound, or NULL. */
static char *refuse_common(const struct repo_guard_host *host, const struct sandbox_spec *spec, const char *c)
{
        const char *ro;
        if (is_system_path(c))
                return xasprintf("'%s' is a system folder", c);
        if (host->host_home && path_is_under(host->host_home, c))
                return xasprintf("'%s' is the home '%s' or a parent of it", c, host->host_home);
        if (host->session_home && path_is_under(host->session_home, c))
                return xasprintf("'%s' is the fresh home or a parent of it", c);
        if (path_is_under(host->repo, c))
                return xasprintf("'%s' is a parent of the repository", c);
        if ((ro = overlapped_ro_bind(spec, c)))
                return xasprintf("'%s' would override the read-only bind of '%s'", c, ro);
        if (!is_git_dir(c))
                return xasprintf("'%s' is not a git directory (no HEAD, objects/ and refs/)", c);
        return NULL;
}

/* The gitdir named by the `.git` file in `repo_fd`, absolute, or NULL. Read
 * as git reads it (setup.c, read_gitfile_gently): the whole file, "gitdir: "
 * with exactly one space, the rest the path with only trailing CR and LF
 * taken off. Any other control byte left in it: NULL, for a path trialbox
 * would resolve otherwise than git ("gitdir:  x", "gitdir: a\nb"). */
static char *dotgit_target(int repo_fd, const char *repo)
{
        size_t len = 0;
        _cleanup_free_ char *content = read_at(repo_fd, ".git", 4096, &len, NULL);
        if (!content || !str_has_prefix(content, "gitdir: "))
                return NULL;
        while (len > 0 && (content[len - 1] == '\n' || content[len - 1] == '\r'))
                content[--len] = '\0';
        const char *gitdir = content + strlen("gitdir: ");
        if (!gitdir[0] || strlen(content) != len)
                return NULL;
        for (const char *c = gitdir; *c; c++)
                if ((unsigned char)*c < 0x20 || *c == 0x7f)
                        return NULL;
        return gitdir[0] == '/' ? xstrdup(gitdir) : xasprintf("%s/%s", repo, gitdir);
}

char *repo_guard_common_dir(const struct repo_guard_host *host, const struct sandbox_spec *spec, char **why)
{
        *why = NULL;
        _cleanup_close_ int repo_fd = open(host->repo, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (repo_fd < 0 || !is_reg_at(repo_fd, ".git"))
                return NULL;
        _cleanup_free_ char *target = dotgit_target(repo_fd, host->repo);
        if (!target)
                return NULL;
        _cleanup_free_ char *g = realpath(target, NULL);
        _cleanup_close_ int g_fd = g ? open(g, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK) : -1;
        if (g_fd < 0) {
                *why = xasprintf("its .git file names '%s', which is not a folder", target);
                return NULL;
        }
        _cleanup_free_ char *common = read_line_at(g_fd, "commondir");
        _cleanup_free_ char *back = read_line_at(g_fd, "gitdir");
        if (!common || !back) {
                *why = xasprintf("'%s' has no commondir and gitdir files (a separate git directory is not bound)", g);
                return NULL;
        }
        _cleanup_free_ char *common_abs = common[0] == '/' ? xstrdup(common) : xasprintf("%s/%s", g, common);
        _cleanup_free_ char *c = realpath(common_abs, NULL);
        const char *name = strrchr(g, '/') + 1;
        _cleanup_free_ char *expect_g = c ? xasprintf("%s/worktrees/%s", c, name) : NULL;
        _cleanup_free_ char *back_abs = back[0] == '/' ? xstrdup(back) : xasprintf("%s/%s", g, back);
        _cleanup_free_ char *back_real = realpath(back_abs, NULL);
        _cleanup_free_ char *dotgit = xasprintf("%s/.git", host->repo);
        if (!c || strcmp(expect_g, g) != 0 || !back_real || strcmp(back_real, dotgit) != 0) {
                *why = xasprintf("'%s' is not a worktree of '%s' that names this repository back", g,
                                 c ? c : common_abs);
                return NULL;
        }
        if ((*why = refuse_common(host, spec, c)))
                return NULL;
        return steal_pointer(&c);
}

/* ---- the record ---- */

const char *repo_guard_status_name(enum guard_status s)
{
        switch (s) {
        case GUARD_RESTORED:
                return "restored";
        case GUARD_QUARANTINED:
                return "quarantined";
        case GUARD_FAILED:
                return "failed";
        default:
                return "none";
        }
}

static void note_move(struct repo_guard *g, const char *path, char *to, const char *why)
{
        GREEDY_REALLOC(g->moved, g->cap_moved, g->n_moved + 1);
        g->moved[g->n_moved++] = (struct guard_move){ .path = shown(path), .to = to, .why = why };
}

/* A step that could not be done: the first one's words are the detail. */
static int note_failure(struct repo_guard *g, int r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int note_failure(struct repo_guard *g, int r, const char *fmt, ...)
{
        if (!g->detail[0]) {
                char what[400];
                va_list ap;
                va_start(ap, fmt);
                vsnprintf(what, sizeof what, fmt, ap);
                va_end(ap);
                snprintf(g->detail, sizeof g->detail, "%s: %s", what, strerror(r < 0 ? -r : EIO));
        }
        return r < 0 ? r : -EIO;
}

/* Move `name` in `dirfd` (shown as `path`) to the quarantine, noting it. */
static int move_out(struct repo_guard *g, int dirfd, const char *name, const char *path, const char *why)
{
        char *to = NULL;
        int r = quarantine_move(&g->q, dirfd, name, &to);
        if (r < 0)
                return note_failure(g, r, "cannot move '%s' out of the repository", path);
        note_move(g, path, to, why);
        return 0;
}

static void note_change(struct repo_guard *g, const char *path, const char *change, bool kept, bool host,
                        char *saved)
{
        GREEDY_REALLOC(g->changes, g->cap_changes, g->n_changes + 1);
        g->changes[g->n_changes++] = (struct guard_change){
                .path = shown(path), .change = change, .kept = kept, .host_config = host, .saved = saved
        };
}

/* ---- before the session ---- */

static int snap_gitdir(struct repo_guard *g, int fd, const char *key, const char *rel, int depth,
                       struct tb_error *err);

/* What modules/ holds below `key` (a git directory's "modules/"): each
 * submodule's git directory (it has a HEAD), and the folders of names with a
 * '/' on the way to them; anything else as a control entry. */
static int snap_modules(struct repo_guard *g, int fd, const char *key, const char *rel, int depth,
                        struct tb_error *err)
{
        if (depth > MODULES_MAX_DEPTH)
                return tb_fail(err, -ELOOP, "'%s/%s' nests submodules more than %d deep; trialbox cannot guard it",
                               g->common, rel, MODULES_MAX_DEPTH);
        _cleanup_strv_ struct strv names = { 0 };
        int r = list_names(fd, &names);
        for (size_t i = 0; r == 0 && i < names.n; i++) {
                _cleanup_free_ char *k = xasprintf("%s%s", key, names.v[i]);
                _cleanup_free_ char *sub = xasprintf("%s%s", rel, names.v[i]);
                _cleanup_close_ int cfd = open_dir_at(fd, names.v[i]);
                if (cfd < 0) {
                        r = snapshot_add(&g->snap, fd, names.v[i], k);
                        continue;
                }
                _cleanup_free_ char *k2 = xasprintf("%s/", k);
                _cleanup_free_ char *sub2 = xasprintf("%s/", sub);
                if (exists_at(cfd, "HEAD")) {
                        strv_add(&g->modules, sub);
                        r = snap_gitdir(g, cfd, k2, sub2, depth + 1, err);
                } else {
                        r = snap_modules(g, cfd, k2, sub2, depth + 1, err);
                }
        }
        return r;
}

/* A linked worktree's own git directory (the Trial's): its control entries. */
static int snap_private(struct repo_guard *g, int fd, const char *key)
{
        _cleanup_strv_ struct strv names = { 0 };
        int r = list_names(fd, &names);
        for (size_t i = 0; r == 0 && i < names.n; i++) {
                enum gitdata_kind k = gitdata_kind(names.v[i], true);
                if (k == GITDATA_CONTROL || k == GITDATA_HEAD) {
                        _cleanup_free_ char *kk = xasprintf("%s%s", key, names.v[i]);
                        r = snapshot_add(&g->snap, fd, names.v[i], kk);
                }
        }
        return r;
}

static int snap_entry(struct repo_guard *g, int fd, const char *name, const char *key, const char *rel, int depth,
                      struct tb_error *err)
{
        _cleanup_free_ char *k = xasprintf("%s%s", key, name);
        switch (gitdata_kind(name, false)) {
        case GITDATA_CONTROL:
        case GITDATA_HEAD:
        case GITDATA_PACKED_REFS: /* data, but put back whole when the session's does not validate */
                return snapshot_add(&g->snap, fd, name, k);
        case GITDATA_OBJECTS: {
                /* The files of objects/info/ that name other object stores. */
                _cleanup_close_ int ifd = openat(fd, "objects/info", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                static const char *const alt[] = { "alternates", "http-alternates" };
                int r = 0;
                for (size_t i = 0; ifd >= 0 && r == 0 && i < TB_ARRAY_SIZE(alt); i++) {
                        _cleanup_free_ char *ak = xasprintf("%sobjects/info/%s", key, alt[i]);
                        r = snapshot_add(&g->snap, ifd, alt[i], ak);
                }
                return r;
        }
        case GITDATA_MODULES: {
                _cleanup_close_ int mfd = open_dir_at(fd, name);
                if (mfd < 0)
                        return snapshot_add(&g->snap, fd, name, k);
                _cleanup_free_ char *mk = xasprintf("%s/", k);
                _cleanup_free_ char *mrel = xasprintf("%smodules/", rel);
                return snap_modules(g, mfd, mk, mrel, depth, err);
        }
        case GITDATA_WORKTREES: {
                _cleanup_close_ int wfd = open_dir_at(fd, name);
                if (wfd < 0)
                        return snapshot_add(&g->snap, fd, name, k);
                _cleanup_strv_ struct strv names = { 0 };
                int r = list_names(wfd, &names);
                for (size_t i = 0; r == 0 && i < names.n; i++) {
                        _cleanup_free_ char *wk = xasprintf("%s/%s", k, names.v[i]);
                        bool own = depth == 0 && g->worktree && strcmp(names.v[i], g->worktree) == 0;
                        _cleanup_close_ int pfd = own ? open_dir_at(wfd, names.v[i]) : -1;
                        if (pfd >= 0) {
                                _cleanup_free_ char *pk = xasprintf("%s/", wk);
                                r = snap_private(g, pfd, pk);
                        } else {
                                r = snapshot_add(&g->snap, wfd, names.v[i], wk);
                        }
                }
                return r;
        }
        default:
                return 0;
        }
}

/* One git directory (the common one, a submodule's) open at `fd`: `key`
 * prefixes its snapshot keys, `rel` is its path from the common one. */
static int snap_gitdir(struct repo_guard *g, int fd, const char *key, const char *rel, int depth,
                       struct tb_error *err)
{
        _cleanup_strv_ struct strv names = { 0 };
        int r = list_names(fd, &names);
        for (size_t i = 0; r == 0 && i < names.n; i++)
                r = snap_entry(g, fd, names.v[i], key, rel, depth, err);
        if (r == -E2BIG)
                return tb_fail(err, r, "the git directory '%s' holds more control files than trialbox can keep (%zu); "
                               "remove what git does not need there",
                               g->common, (size_t)SNAPSHOT_MAX_ITEMS);
        if (r < 0 && !err->msg[0])
                return tb_fail(err, r, "cannot keep the control files of the git directory '%s': %s", g->common,
                               strerror(-r));
        return r;
}

/* A path the host's own config names, made absolute: `~/` against the
 * home, a relative one against `base`. malloc'd, or NULL. */
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
        if (!path_is_under(n, g->repo) || strcmp(n, g->repo) == 0 || (g->common && path_is_under(n, g->common)))
                return;
        const char *rel = n + strlen(g->repo) + 1;
        if (!strv_contains(&g->host_paths, rel))
                strv_add(&g->host_paths, rel);
}

/* The links among the git directory's control entries (a hooks folder, a
 * hook) that point into the worktree: the host's git follows them there. */
static void find_link_targets(struct repo_guard *g)
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

/* The worktree paths the host's own git config names as a hooks folder or
 * a config to include (husky's `core.hooksPath = .husky`, a shared
 * `include.path = ../team.gitconfig`): the session could write git code
 * there. From the repository's config and the host user's global one, as
 * before the session. Lexically inside the repository, not in its .git. */
static void find_host_paths(struct repo_guard *g, const struct repo_guard_host *host)
{
        _cleanup_free_ char *git = host->path ? find_on_path("git", host->path) : NULL;
        if (!git)
                return;
        _cleanup_free_ char *repo_config = g->common ? xasprintf("%s/config", g->common) : NULL;
        const char *files[] = { repo_config, NULL };
        for (size_t i = 0; i < 2; i++) {
                if (i == 0 && !repo_config)
                        continue;
                _cleanup_free_ char *out = xmalloc(65536);
                const char *const args_file[] = { "config", "--file", files[0] ? files[0] : "/dev/null", "--get-regexp",
                                                  "^(core\\.hookspath|include\\.path|includeif\\..*\\.path)$", NULL };
                const char *const args_global[] = { "config", "--global", "--get-regexp",
                                                    "^(core\\.hookspath|include\\.path|includeif\\..*\\.path)$", NULL };
                if (!host_git_run(git, i == 0 ? NULL : host->host_home, i == 0 ? args_file : args_global, out, 65536,
                                  NULL))
                        continue;
                char *save = NULL;
                for (char *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
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
                int next = open_dir_at(fd, part);
                int e = errno;
                close(fd);
                fd = next;
                errno = e;
        }
        *leaf = p;
        return fd;
}

/* Snapshot a worktree control path (`kind`: "host:" or "tool:"). */
static int snap_path(struct repo_guard *g, const char *kind, const char *rel)
{
        _cleanup_free_ char *key = xasprintf("%s%s", kind, rel);
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
static int snap_tool_files(struct repo_guard *g)
{
        size_t n;
        const struct tool_file *t = tool_files(&n);
        int r = 0;
        for (size_t i = 0; r == 0 && i < n; i++) {
                if (!t[i].prefix) {
                        strv_add(&g->tool_paths, t[i].path);
                        r = snap_path(g, "tool:", t[i].path);
                        continue;
                }
                _cleanup_close_ int fd = open_dir_at(g->repo_fd, t[i].path);
                _cleanup_strv_ struct strv names = { 0 };
                if (fd >= 0)
                        list_names(fd, &names);
                for (size_t j = 0; r == 0 && j < names.n; j++) {
                        size_t a = strlen(names.v[j]), b = strlen(t[i].suffix);
                        if (!str_has_prefix(names.v[j], t[i].prefix) || a < b || strcmp(names.v[j] + a - b, t[i].suffix))
                                continue;
                        _cleanup_free_ char *rel = xasprintf("%s/%s", t[i].path, names.v[j]);
                        strv_add(&g->tool_paths, rel);
                        r = snap_path(g, "tool:", rel);
                }
        }
        return r;
}

static int cmp_seen(const void *a, const void *b)
{
        return strcmp(((const struct guard_seen *)a)->path, ((const struct guard_seen *)b)->path);
}

/* The worktree before the session: its links, FIFOs, sockets and devices,
 * and the `.git` files below its top (a submodule's, a linked worktree's). */
static int seen_pre(struct tree_dir *d, void *ctx)
{
        struct repo_guard *g = ctx;
        for (size_t i = 0; i < d->n; i++) {
                struct tree_entry *e = &d->v[i];
                bool dotgit = strcmp(e->name, ".git") == 0;
                if (dotgit && d->depth == 0) {
                        e->skip = true;
                        continue;
                }
                if (e->type == DT_DIR || (e->type == DT_REG && !dotgit))
                        continue;
                GREEDY_REALLOC(g->seen, g->cap_seen, g->n_seen + 1);
                struct guard_seen *s = &g->seen[g->n_seen++];
                *s = (struct guard_seen){ .path = tree_dir_path(d, e->name, 0), .type = e->type };
                if (e->type == DT_LNK) {
                        char buf[PATH_MAX];
                        ssize_t k = readlinkat(d->fd, e->name, buf, sizeof buf - 1);
                        if (k >= 0) {
                                s->data = strndup(buf, (size_t)k);
                                s->len = (size_t)k;
                        }
                } else if (e->type == DT_REG) {
                        s->data = read_at(d->fd, e->name, 4096, &s->len, NULL);
                }
        }
        return 0;
}

int repo_guard_open(struct repo_guard *g, const struct repo_guard_host *host, const struct sandbox_spec *spec,
                    struct tb_error *err)
{
        *g = (struct repo_guard){ .repo = xstrdup(host->repo), .repo_fd = -1, .common_fd = -1,
                                  .keep_control_files = host->keep_control_files, .q = QUARANTINE_INIT };
        g->repo_fd = open(host->repo, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (g->repo_fd < 0)
                return tb_fail(err, -errno, "repository '%s': %s", host->repo, strerror(errno));
        struct stat st;
        if (fstatat(g->repo_fd, ".git", &st, AT_SYMLINK_NOFOLLOW) == 0) {
                /* A link: git follows it to control files trialbox cannot keep through it. */
                if (S_ISLNK(st.st_mode))
                        return tb_fail(err, -EINVAL,
                                       "'%s/.git' is a link: git would follow it to files trialbox cannot protect; "
                                       "make it the git folder itself, or a 'gitdir:' file",
                                       host->repo);
                g->dotgit = S_ISDIR(st.st_mode) ? 'd' : S_ISREG(st.st_mode) ? 'f' : 'x';
        }
        int r = 0;
        if (g->dotgit == 'd') {
                g->common = xasprintf("%s/.git", host->repo);
        } else if (g->dotgit == 'f') {
                r = snapshot_add(&g->snap, g->repo_fd, ".git", "dotgit");
                g->common = repo_guard_common_dir(host, spec, &g->refused);
                if (g->common) {
                        /* Its own git directory is C/worktrees/NAME (proven above): the name. */
                        _cleanup_free_ char *gd = read_line_at(g->repo_fd, ".git");
                        const char *slash = gd ? strrchr(gd, '/') : NULL;
                        g->worktree = slash && slash[1] ? xstrdup(slash + 1) : NULL;
                }
        }
        if (r == 0 && g->common) {
                g->common_fd = open(g->common, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (g->common_fd < 0 || fstat(g->common_fd, &st) < 0)
                        return tb_fail(err, -errno, "git directory '%s': %s", g->common, strerror(errno));
                g->git_dev = st.st_dev;
                g->git_ino = st.st_ino;
                r = snap_gitdir(g, g->common_fd, "git:", "", 0, err);
        }
        if (r < 0)
                return err->msg[0] ? r : tb_fail(err, r, "cannot keep '%s/.git': %s", host->repo, strerror(-r));
        find_host_paths(g, host);
        find_link_targets(g);
        for (size_t i = 0; r == 0 && i < g->host_paths.n; i++)
                r = snap_path(g, "host:", g->host_paths.v[i]);
        if (r == 0)
                r = snap_tool_files(g);
        if (r == 0) {
                const struct tree_ops ops = { .pre = seen_pre };
                r = tree_walk(g->repo_fd, &ops, g);
                qsort(g->seen, g->n_seen, sizeof *g->seen, cmp_seen);
        }
        if (r == -E2BIG)
                return tb_fail(err, r, "the control files of '%s' are more than trialbox can keep (%zu); remove what "
                               "is not needed",
                               host->repo, (size_t)SNAPSHOT_MAX_ITEMS);
        if (r < 0)
                return tb_fail(err, r, "cannot read the repository '%s' before the session: %s", host->repo,
                               strerror(-r));
        return 0;
}

void repo_guard_add_binds(const struct repo_guard *g, struct sandbox_spec *spec)
{
        if (g->worktree && g->common && !path_is_under(g->common, g->repo))
                sandbox_add(spec, SANDBOX_BIND, g->common, g->common);
}

/* ---- after the session: the git directory ---- */

/* The context of one git directory being rebuilt. */
struct gd {
        struct repo_guard *g;
        int fd;
        const char *key;   /* its snapshot keys' prefix ("git:", "git:modules/a/") */
        const char *shown; /* its path as the record shows it (".git/", "/x/.git/modules/a/") */
        const char *rel;   /* its path from the common git directory ("", "modules/a/") */
        bool worktree;     /* a linked worktree's own */
        int depth;
};

static char *gd_path(const struct gd *d, const char *name) { return xasprintf("%s%s", d->shown, name); }

/* A control entry: kept when the same as before, else the session's moved
 * out and the snapshot's put back. */
static int fix_control(struct repo_guard *g, int dirfd, const char *name, const char *key, const char *path)
{
        if (snapshot_same(&g->snap, dirfd, name, key))
                return 0;
        bool existed = snapshot_existed(&g->snap, key);
        if (exists_at(dirfd, name)) {
                int r = move_out(g, dirfd, name, path, existed ? "a control entry the session changed" :
                                                                 "a control entry the session made");
                if (r < 0)
                        return r;
        }
        if (!existed)
                return 0;
        int r = snapshot_restore(&g->snap, dirfd, name, key);
        if (r < 0)
                return note_failure(g, r, "cannot put '%s' back as it was before the session", path);
        strv_add_take(&g->restored, shown(path));
        return 0;
}

/* A data file: kept when a regular file of at most `max` bytes whose
 * content `valid` accepts (NULL: any); else moved out, and put back from
 * the snapshot when `key` was kept. */
static int fix_data_file(const struct gd *d, const char *name, size_t max, bool (*valid)(const char *, size_t),
                         const char *key)
{
        struct stat st;
        if (fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return 0;
        const char *why = NULL;
        if (!S_ISREG(st.st_mode)) {
                why = "data that is not a regular file";
        } else if ((size_t)st.st_size > max) {
                why = "data larger than git writes";
        } else if (valid) {
                size_t len = 0;
                _cleanup_free_ char *text = read_at(d->fd, name, max, &len, NULL);
                if (!text || !valid(text, len))
                        why = "data git would not read as such";
        }
        if (!why)
                return 0;
        _cleanup_free_ char *path = gd_path(d, name);
        int r = move_out(d->g, d->fd, name, path, why);
        if (r == 0 && key && snapshot_existed(&d->g->snap, key)) {
                r = snapshot_restore(&d->g->snap, d->fd, name, key);
                if (r < 0)
                        return note_failure(d->g, r, "cannot put '%s' back as it was before the session", path);
                strv_add_take(&d->g->restored, shown(path));
        }
        return r;
}

static bool index_valid(const char *s, size_t len) { return len >= 12 && memcmp(s, "DIRC", 4) == 0; }

static bool any_bytes(const char *s, size_t len)
{
        (void)s;
        (void)len;
        return true;
}

/* A data folder walked: `ok` says whether an entry may stay. */
struct data_walk {
        const struct gd *d;
        const char *top; /* "refs", "objects", "logs" */
        bool (*ok)(struct data_walk *w, struct tree_dir *dir, struct tree_entry *e, const char *rel);
        int r;
};

static int data_pre(struct tree_dir *dir, void *ctx)
{
        struct data_walk *w = ctx;
        for (size_t i = 0; i < dir->n; i++) {
                struct tree_entry *e = &dir->v[i];
                _cleanup_free_ char *rel = tree_dir_path(dir, e->name, 0);
                if (w->ok(w, dir, e, rel))
                        continue;
                e->skip = true;
                _cleanup_free_ char *path = xasprintf("%s%s/%s", w->d->shown, w->top, rel);
                int r = move_out(w->d->g, dir->fd, e->name, path, "data git would not read as such");
                if (r < 0)
                        return r;
        }
        return 0;
}

static bool ref_ok(struct data_walk *w, struct tree_dir *dir, struct tree_entry *e, const char *rel)
{
        (void)w;
        _cleanup_free_ char *name = xasprintf("refs/%s", rel);
        if (!gitdata_refname_valid(name))
                return false;
        if (e->type == DT_DIR)
                return true;
        if (e->type != DT_REG)
                return false;
        size_t len = 0;
        _cleanup_free_ char *v = read_at(dir->fd, e->name, REF_MAX, &len, NULL);
        return v && gitdata_ref_value_valid(v, len);
}

static bool object_ok(struct data_walk *w, struct tree_dir *dir, struct tree_entry *e, const char *rel)
{
        bool is_dir = e->type == DT_DIR;
        if (!is_dir && e->type != DT_REG)
                return false;
        if (dir->depth == 0)
                return gitdata_object_name_valid(NULL, e->name, is_dir);
        _cleanup_free_ char *parent = strndup(rel, strlen(rel) - strlen(e->name) - 1);
        if (strcmp(parent, "info") == 0 && !is_dir &&
            (strcmp(e->name, "alternates") == 0 || strcmp(e->name, "http-alternates") == 0)) {
                /* Not data: other object stores. The control entry's own check. */
                _cleanup_free_ char *key = xasprintf("%sobjects/info/%s", w->d->key, e->name);
                _cleanup_free_ char *path = xasprintf("%sobjects/info/%s", w->d->shown, e->name);
                int r = fix_control(w->d->g, dir->fd, e->name, key, path);
                if (r < 0)
                        w->r = r;
                return true;
        }
        return gitdata_object_name_valid(parent, e->name, is_dir);
}

static bool log_ok(struct data_walk *w, struct tree_dir *dir, struct tree_entry *e, const char *rel)
{
        (void)w;
        (void)dir;
        (void)rel;
        return e->type == DT_DIR || e->type == DT_REG;
}

/* refs/, objects/ or logs/: a folder whose entries `ok` accepts; one that
 * is not a folder is moved out (and an empty one made for refs/ and
 * objects/, which git needs). */
static int fix_data_dir(const struct gd *d, const char *name,
                        bool (*ok)(struct data_walk *, struct tree_dir *, struct tree_entry *, const char *))
{
        _cleanup_free_ char *path = gd_path(d, name);
        int fd = open_dir_at(d->fd, name);
        if (fd < 0) {
                if (!exists_at(d->fd, name))
                        return 0;
                int r = move_out(d->g, d->fd, name, path, "data that is not a folder");
                if (r < 0)
                        return r;
        } else {
                struct data_walk w = { .d = d, .top = name, .ok = ok };
                const struct tree_ops ops = { .pre = data_pre, .flags = TREE_FIX_MODES };
                int r = tree_walk(fd, &ops, &w);
                close(fd);
                if (r == 0)
                        r = w.r;
                return r < 0 ? note_failure(d->g, r, "cannot check '%s'", path) : 0;
        }
        return 0;
}

/* What a git directory needs to be one, made when missing: refs/ and
 * objects/ (a full one), and whatever control entry the session removed. */
static int restore_missing(const struct gd *d)
{
        struct snapshot *s = &d->g->snap;
        size_t k = strlen(d->key);
        for (size_t i = 0; i < s->n; i++) {
                const struct snap_item *it = &s->v[i];
                if (it->absent || strncmp(it->key, d->key, k) != 0 || strchr(it->key + k, '/'))
                        continue;
                const char *name = it->key + k;
                if (exists_at(d->fd, name))
                        continue;
                _cleanup_free_ char *key = xstrdup(it->key);
                _cleanup_free_ char *path = gd_path(d, name);
                int r = snapshot_restore(s, d->fd, name, key);
                if (r < 0)
                        return note_failure(d->g, r, "cannot put '%s' back as it was before the session", path);
                strv_add_take(&d->g->restored, shown(path));
        }
        static const char *const needed[] = { "refs", "objects" };
        for (size_t i = 0; !d->worktree && i < TB_ARRAY_SIZE(needed); i++) {
                if (exists_at(d->fd, needed[i]))
                        continue;
                _cleanup_free_ char *path = gd_path(d, needed[i]);
                if (mkdirat(d->fd, needed[i], 0755) < 0)
                        return note_failure(d->g, -errno, "cannot make '%s'", path);
                strv_add_take(&d->g->restored, shown(path));
        }
        return 0;
}

static int fix_gitdir(const struct gd *d);

/* A linked worktree's own git directory (the Trial's). */
static int fix_private(const struct gd *d)
{
        _cleanup_strv_ struct strv names = { 0 };
        int r = list_names(d->fd, &names);
        for (size_t i = 0; r == 0 && i < names.n; i++) {
                const char *n = names.v[i];
                _cleanup_free_ char *key = xasprintf("%s%s", d->key, n);
                _cleanup_free_ char *path = gd_path(d, n);
                switch (gitdata_kind(n, true)) {
                case GITDATA_HEAD:
                        r = fix_data_file(d, n, REF_MAX, gitdata_ref_value_valid, key);
                        break;
                case GITDATA_INDEX:
                        r = fix_data_file(d, n, SIZE_MAX, index_valid, NULL);
                        break;
                case GITDATA_PSEUDO_REF:
                        r = fix_data_file(d, n, TEXT_MAX, gitdata_pseudo_ref_valid, NULL);
                        break;
                case GITDATA_TEXT:
                        r = fix_data_file(d, n, TEXT_MAX, any_bytes, NULL);
                        break;
                case GITDATA_LOGS:
                        r = fix_data_dir(d, n, log_ok);
                        break;
                default:
                        r = fix_control(d->g, d->fd, n, key, path);
                }
        }
        return r < 0 ? r : restore_missing(d);
}

/* modules/ (below `d`, at `fd`, `rel` its path from the common directory). */
static int fix_modules(const struct gd *d, int fd, const char *key, const char *shown_prefix, const char *rel,
                       int depth)
{
        struct repo_guard *g = d->g;
        _cleanup_strv_ struct strv names = { 0 };
        int r = list_names(fd, &names);
        for (size_t i = 0; r == 0 && i < names.n; i++) {
                const char *n = names.v[i];
                _cleanup_free_ char *k = xasprintf("%s%s", key, n);
                _cleanup_free_ char *path = xasprintf("%s%s", shown_prefix, n);
                _cleanup_free_ char *sub = xasprintf("%s%s", rel, n);
                _cleanup_free_ char *sub_prefix = xasprintf("%s/", sub);
                bool module = strv_contains(&g->modules, sub), on_the_way = false;
                for (size_t j = 0; j < g->modules.n && !module; j++)
                        on_the_way = on_the_way || str_has_prefix(g->modules.v[j], sub_prefix);
                _cleanup_close_ int cfd = (module || on_the_way) ? open_dir_at(fd, n) : -1;
                _cleanup_free_ char *k2 = xasprintf("%s/", k);
                _cleanup_free_ char *p2 = xasprintf("%s/", path);
                if (cfd >= 0 && module) {
                        struct gd sd = { .g = g, .fd = cfd, .key = k2, .shown = p2, .rel = sub_prefix,
                                         .depth = d->depth + 1 };
                        r = fix_gitdir(&sd);
                } else if (cfd >= 0 && depth < MODULES_MAX_DEPTH) {
                        r = fix_modules(d, cfd, k2, p2, sub_prefix, depth + 1);
                } else if (snapshot_has(&g->snap, k)) {
                        r = fix_control(g, fd, n, k, path);
                } else {
                        r = move_out(g, fd, n, path,
                                     module || on_the_way ? "a submodule's git directory replaced by the session"
                                                          : "a git directory the session made under modules/");
                }
        }
        return r;
}

static int fix_worktrees(const struct gd *d, const char *name)
{
        struct repo_guard *g = d->g;
        _cleanup_free_ char *key = xasprintf("%s%s/", d->key, name);
        _cleanup_free_ char *path = gd_path(d, name);
        _cleanup_free_ char *prefix = xasprintf("%s/", path);
        _cleanup_close_ int wfd = open_dir_at(d->fd, name);
        if (wfd < 0)
                return move_out(g, d->fd, name, path, "worktrees/ that is not a folder");
        _cleanup_strv_ struct strv names = { 0 };
        int r = list_names(wfd, &names);
        for (size_t i = 0; r == 0 && i < names.n; i++) {
                const char *n = names.v[i];
                _cleanup_free_ char *k = xasprintf("%s%s", key, n);
                _cleanup_free_ char *p = xasprintf("%s%s", prefix, n);
                bool own = d->depth == 0 && g->worktree && strcmp(n, g->worktree) == 0;
                _cleanup_close_ int pfd = own ? open_dir_at(wfd, n) : -1;
                if (pfd >= 0) {
                        _cleanup_free_ char *k2 = xasprintf("%s/", k);
                        _cleanup_free_ char *p2 = xasprintf("%s/", p);
                        struct gd pd = { .g = g, .fd = pfd, .key = k2, .shown = p2, .worktree = true, .depth = 1 };
                        r = fix_private(&pd);
                } else {
                        r = fix_control(g, wfd, n, k, p);
                }
        }
        if (r == 0) {
                struct gd wd = { .g = g, .fd = wfd, .key = key, .shown = prefix, .worktree = true, .depth = 1 };
                r = restore_missing(&wd);
        }
        return r;
}

/* A full git directory (the common one, a submodule's). */
static int fix_gitdir(const struct gd *d)
{
        _cleanup_strv_ struct strv names = { 0 };
        int r = list_names(d->fd, &names);
        for (size_t i = 0; r == 0 && i < names.n; i++) {
                const char *n = names.v[i];
                _cleanup_free_ char *key = xasprintf("%s%s", d->key, n);
                _cleanup_free_ char *path = gd_path(d, n);
                switch (gitdata_kind(n, false)) {
                case GITDATA_HEAD:
                        r = fix_data_file(d, n, REF_MAX, gitdata_ref_value_valid, key);
                        break;
                case GITDATA_PACKED_REFS:
                        r = fix_data_file(d, n, PACKED_REFS_MAX, gitdata_packed_refs_valid, key);
                        break;
                case GITDATA_INDEX:
                        r = fix_data_file(d, n, SIZE_MAX, strcmp(n, "index") == 0 ? index_valid : any_bytes, NULL);
                        break;
                case GITDATA_PSEUDO_REF:
                        r = fix_data_file(d, n, TEXT_MAX, gitdata_pseudo_ref_valid, NULL);
                        break;
                case GITDATA_TEXT:
                        r = fix_data_file(d, n, TEXT_MAX, any_bytes, NULL);
                        break;
                case GITDATA_REFS:
                        r = fix_data_dir(d, n, ref_ok);
                        break;
                case GITDATA_OBJECTS:
                        r = fix_data_dir(d, n, object_ok);
                        break;
                case GITDATA_LOGS:
                        r = fix_data_dir(d, n, log_ok);
                        break;
                case GITDATA_MODULES: {
                        _cleanup_close_ int mfd = open_dir_at(d->fd, n);
                        _cleanup_free_ char *mk = xasprintf("%s/", key);
                        _cleanup_free_ char *mp = xasprintf("%s/", path);
                        _cleanup_free_ char *mrel = xasprintf("%smodules/", d->rel);
                        if (mfd < 0)
                                r = snapshot_has(&d->g->snap, key) ? fix_control(d->g, d->fd, n, key, path)
                                                                   : move_out(d->g, d->fd, n, path, "modules/ that is not a folder");
                        else
                                r = fix_modules(d, mfd, mk, mp, mrel, 0);
                        break;
                }
                case GITDATA_WORKTREES:
                        r = fix_worktrees(d, n);
                        break;
                default:
                        r = fix_control(d->g, d->fd, n, key, path);
                }
        }
        if (r == 0)
                r = restore_missing(d);
        /* objects/info/alternates the session removed. */
        static const char *const alt[] = { "alternates", "http-alternates" };
        for (size_t i = 0; r == 0 && i < TB_ARRAY_SIZE(alt); i++) {
                _cleanup_free_ char *key = xasprintf("%sobjects/info/%s", d->key, alt[i]);
                if (!snapshot_existed(&d->g->snap, key))
                        continue;
                if (mkdirat(d->fd, "objects/info", 0755) < 0 && errno != EEXIST)
                        return note_failure(d->g, -errno, "cannot make '%sobjects/info'", d->shown);
                _cleanup_close_ int ifd = openat(d->fd, "objects/info", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                _cleanup_free_ char *path = xasprintf("%sobjects/info/%s", d->shown, alt[i]);
                r = ifd < 0 ? note_failure(d->g, -errno, "cannot open '%sobjects/info'", d->shown)
                            : fix_control(d->g, ifd, alt[i], key, path);
        }
        return r;
}

/* The git folder the session left at `.git`: the very one kept before (by
 * its fd), moved back there when the session renamed it. An fd, or -1 when
 * it is gone (g->detail says why). */
static int find_gitdir(struct repo_guard *g)
{
        struct stat st;
        if (fstatat(g->repo_fd, ".git", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
            st.st_dev == g->git_dev && st.st_ino == g->git_ino)
                return openat(g->repo_fd, ".git", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        char self[64], where[PATH_MAX];
        snprintf(self, sizeof self, "/proc/self/fd/%d", g->common_fd);
        ssize_t n = readlink(self, where, sizeof where - 1);
        if (n < 0 || fstat(g->common_fd, &st) < 0 || st.st_nlink == 0) {
                note_failure(g, -ENOENT, "the session removed the git folder '%s/.git'", g->repo);
                return -1;
        }
        where[n] = '\0';
        _cleanup_free_ char *inside = xasprintf("%s/", g->repo);
        if (!str_has_prefix(where, inside)) {
                note_failure(g, -EXDEV, "the git folder of '%s' is now at '%s'", g->repo, where);
                return -1;
        }
        if (exists_at(g->repo_fd, ".git") && move_out(g, g->repo_fd, ".git", ".git", "the session's .git in place of the repository's") < 0)
                return -1;
        if (renameat(AT_FDCWD, where, g->repo_fd, ".git") < 0) {
                note_failure(g, -errno, "cannot move the git folder back from '%s'", where);
                return -1;
        }
        _cleanup_free_ char *from = xasprintf("git folder moved back from %s", where + strlen(inside));
        strv_add_take(&g->restored, shown(from));
        return find_gitdir(g);
}

/* The top `.git` file (a linked worktree's, or one not bound): its bytes as before. */
static int fix_dotgit_file(struct repo_guard *g)
{
        return fix_control(g, g->repo_fd, ".git", "dotgit", ".git");
}

/* Fail closed: the whole `.git` to the quarantine, none left. */
static void quarantine_dotgit(struct repo_guard *g)
{
        char *to = NULL;
        if (!exists_at(g->repo_fd, ".git")) {
                g->status = GUARD_QUARANTINED;
                return;
        }
        int r = quarantine_move(&g->q, g->repo_fd, ".git", &to);
        if (r < 0) {
                g->status = GUARD_FAILED;
                size_t k = strlen(g->detail);
                snprintf(g->detail + k, sizeof g->detail - k, "; and the .git could not be moved out: %s",
                         strerror(-r));
                return;
        }
        note_move(g, ".git", to, "the whole git folder: a step of its rebuild could not be done");
        g->status = GUARD_QUARANTINED;
}

static int rebuild_git(struct repo_guard *g)
{
        if (g->dotgit == 'f')
                return fix_dotgit_file(g);
        if (g->dotgit != 'd') { /* none before: any .git now is the session's */
                if (exists_at(g->repo_fd, ".git"))
                        return move_out(g, g->repo_fd, ".git", ".git", "a .git the session made");
                return 0;
        }
        _cleanup_close_ int fd = find_gitdir(g);
        if (fd < 0)
                return -EIO;
        struct stat st;
        if (fstat(fd, &st) == 0 && (st.st_mode & 0700) != 0700 && fchmod(fd, (st.st_mode & 07777) | 0700) < 0)
                return note_failure(g, -errno, "cannot give '%s/.git' its permissions back", g->repo);
        struct gd d = { .g = g, .fd = fd, .key = "git:", .shown = ".git/", .rel = "" };
        return fix_gitdir(&d);
}

static int rebuild_common(struct repo_guard *g)
{
        int r = fix_dotgit_file(g);
        if (r < 0 || !g->common)
                return r;
        _cleanup_free_ char *prefix = xasprintf("%s/", g->common);
        struct gd d = { .g = g, .fd = g->common_fd, .key = "git:", .shown = prefix, .rel = "" };
        return fix_gitdir(&d);
}

/* ---- after the session: the worktree ---- */

struct scan {
        struct repo_guard *g;
        uid_t uid;
        size_t *bare; /* the depths of folders found in a git directory's shape, to move once walked */
        size_t n_bare, cap_bare;
        int r;
};

static const struct guard_seen *seen_find(const struct repo_guard *g, const char *path)
{
        struct guard_seen k = { .path = (char *)path };
        return bsearch(&k, g->seen, g->n_seen, sizeof *g->seen, cmp_seen);
}

static bool has_name(const struct tree_dir *d, const char *name)
{
        for (size_t i = 0; i < d->n; i++)
                if (strcmp(d->v[i].name, name) == 0)
                        return true;
        return false;
}

/* A `.git` below the top that may stay: a submodule's or linked worktree's
 * `.git` file, the same bytes as before the session. */
static bool dotgit_kept(struct repo_guard *g, const struct tree_dir *d, const struct tree_entry *e, const char *path)
{
        const struct guard_seen *s = seen_find(g, path);
        if (!s || s->type != DT_REG || e->type != DT_REG || !s->data)
                return false;
        size_t len = 0;
        _cleanup_free_ char *now = read_at(d->fd, e->name, 4096, &len, NULL);
        return now && len == s->len && memcmp(now, s->data, len) == 0;
}

static void note_special(struct repo_guard *g, int dirfd, const struct tree_entry *e, char *path)
{
        char target[PATH_MAX] = "";
        if (e->type == DT_LNK) {
                ssize_t k = readlinkat(dirfd, e->name, target, sizeof target - 1);
                target[k > 0 ? k : 0] = '\0';
        }
        const struct guard_seen *s = seen_find(g, path);
        if (s && s->type == e->type && (e->type != DT_LNK || (s->data && strcmp(s->data, target) == 0))) {
                free(path);
                return;
        }
        GREEDY_REALLOC(g->special, g->cap_special, g->n_special + 1);
        g->special[g->n_special++] = (struct guard_seen){ .path = path, .type = e->type,
                                                          .data = e->type == DT_LNK ? shown(target) : NULL };
}

/* Clear setuid and setgid of the regular file `name` in `dirfd`. */
static int clear_setuid(struct repo_guard *g, int dirfd, const char *name, uid_t uid, const struct tree_dir *d,
                        const char *shown_prefix)
{
        struct stat st;
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
            !(st.st_mode & (S_ISUID | S_ISGID)))
                return 0;
        /* Never a file that is also elsewhere and not the session's (a link to a system program). */
        if (st.st_uid != uid && st.st_nlink != 1)
                return 0;
        _cleanup_free_ char *rel = tree_dir_path(d, name, 0);
        _cleanup_free_ char *path = xasprintf("%s%s", shown_prefix, rel);
        if (fchmodat(dirfd, name, st.st_mode & 0777 & ~(mode_t)(S_ISUID | S_ISGID), 0) < 0)
                return note_failure(g, -errno, "cannot clear the setuid bit of '%s'", path);
        strv_add_take(&g->setuid_cleared, shown(path));
        return 0;
}

static int scan_pre(struct tree_dir *d, void *ctx)
{
        struct scan *s = ctx;
        struct repo_guard *g = s->g;
        /* A folder git would take for a git directory (setup.c's
         * is_git_directory: HEAD, and objects/ with refs/ or a commondir). */
        bool bare = has_name(d, "HEAD") && (has_name(d, "commondir") || (has_name(d, "objects") && has_name(d, "refs")));
        if (bare && d->depth > 0) {
                for (size_t i = 0; i < d->n; i++)
                        d->v[i].skip = true;
                GREEDY_REALLOC(s->bare, s->cap_bare, s->n_bare + 1);
                s->bare[s->n_bare++] = d->depth;
                return 0;
        }
        for (size_t i = 0; i < d->n; i++) {
                struct tree_entry *e = &d->v[i];
                int r = 0;
                if (d->depth == 0 && strcmp(e->name, ".git") == 0) {
                        e->skip = true; /* the repository's own: rebuilt above */
                        continue;
                }
                if (bare && (strcmp(e->name, "HEAD") == 0 || strcmp(e->name, "commondir") == 0)) {
                        e->skip = true;
                        r = move_out(g, d->fd, e->name, e->name, "makes the repository's top look like a git directory");
                } else if (strcmp(e->name, ".git") == 0) {
                        _cleanup_free_ char *path = tree_dir_path(d, e->name, 0);
                        e->skip = true;
                        if (!dotgit_kept(g, d, e, path))
                                r = move_out(g, d->fd, e->name, path, "a .git below the repository's top");
                } else if (e->type == DT_REG) {
                        r = clear_setuid(g, d->fd, e->name, s->uid, d, "");
                } else if (e->type != DT_DIR) {
                        note_special(g, d->fd, e, tree_dir_path(d, e->name, 0));
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

static int scan_post(struct tree_dir *d, const char *name, void *ctx)
{
        struct scan *s = ctx;
        if (s->n_bare == 0 || s->bare[s->n_bare - 1] != d->depth + 1)
                return 0;
        s->n_bare--;
        _cleanup_free_ char *path = tree_dir_path(d, name, 0);
        return move_out(s->g, d->fd, name, path, "a folder in a git directory's shape (HEAD, objects/, refs/)");
}

/* ---- after the session: other tools' control files and the host's paths ---- */

/* The worktree control path `rel` (snapshot key `key`): a change listed,
 * and with `revert` the session's version moved out and the one before put
 * back. A folder on the way that the session replaced (by a link, a file)
 * is moved out too, and made again, when reverting. */
static int fix_path(struct repo_guard *g, const char *rel, const char *key, bool revert, bool host)
{
        bool existed = snapshot_existed(&g->snap, key);
        _cleanup_close_ int fd = fcntl(g->repo_fd, F_DUPFD_CLOEXEC, 3);
        const char *p = rel;
        for (const char *slash; fd >= 0 && (slash = strchr(p, '/')); p = slash + 1) {
                _cleanup_free_ char *part = strndup(p, (size_t)(slash - p));
                _cleanup_free_ char *upto = strndup(rel, (size_t)(slash - rel));
                int next = open_dir_at(fd, part);
                if (next < 0 && exists_at(fd, part)) { /* replaced by what is not a folder */
                        if (!revert) {
                                note_change(g, rel, existed ? "changed" : "new", true, host, NULL);
                                return 0;
                        }
                        int r = move_out(g, fd, part, upto, "replaced a folder above a control file");
                        if (r < 0)
                                return r;
                }
                if (next < 0 && existed) {
                        if (mkdirat(fd, part, 0755) < 0 && errno != EEXIST)
                                return note_failure(g, -errno, "cannot make '%s'", upto);
                        next = open_dir_at(fd, part);
                }
                close(fd);
                fd = next;
        }
        if (fd < 0) /* not there, and was not */
                return existed ? note_failure(g, -errno, "cannot reach '%s'", rel) : 0;
        if (snapshot_same(&g->snap, fd, p, key))
                return 0;
        bool present = exists_at(fd, p);
        const char *change = !existed ? "new" : present ? "changed" : "removed";
        char *saved = NULL;
        if (revert && present) {
                int r = quarantine_move(&g->q, fd, p, &saved);
                if (r < 0)
                        return note_failure(g, r, "cannot move '%s' out of the repository", rel);
        }
        if (revert && existed) {
                int r = snapshot_restore(&g->snap, fd, p, key);
                if (r < 0) {
                        free(saved);
                        return note_failure(g, r, "cannot put '%s' back as it was before the session", rel);
                }
        }
        note_change(g, rel, change, !revert, host, saved);
        return 0;
}

static int fix_paths(struct repo_guard *g)
{
        int r = 0;
        for (size_t i = 0; r == 0 && i < g->host_paths.n; i++) {
                _cleanup_free_ char *key = xasprintf("host:%s", g->host_paths.v[i]);
                r = fix_path(g, g->host_paths.v[i], key, true, true);
        }
        /* New entries of the folders whose matching entries are control files. */
        size_t n;
        const struct tool_file *t = tool_files(&n);
        for (size_t i = 0; i < n; i++) {
                if (!t[i].prefix)
                        continue;
                _cleanup_close_ int fd = open_dir_at(g->repo_fd, t[i].path);
                _cleanup_strv_ struct strv names = { 0 };
                if (fd >= 0)
                        list_names(fd, &names);
                for (size_t j = 0; j < names.n; j++) {
                        size_t a = strlen(names.v[j]), b = strlen(t[i].suffix);
                        if (!str_has_prefix(names.v[j], t[i].prefix) || a < b || strcmp(names.v[j] + a - b, t[i].suffix))
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
                r = fix_path(g, g->tool_paths.v[i], key, !g->keep_control_files, false);
        }
        return r;
}

/* ---- after the session ---- */

struct sweep {
        struct repo_guard *g;
        uid_t uid;
        const char *shown;
};

static int sweep_pre(struct tree_dir *d, void *ctx)
{
        struct sweep *s = ctx;
        for (size_t i = 0; i < d->n; i++) {
                if (d->v[i].type != DT_REG)
                        continue;
                int r = clear_setuid(s->g, d->fd, d->v[i].name, s->uid, d, s->shown);
                if (r < 0)
                        return r;
        }
        return 0;
}

int repo_guard_clear_setuid(struct repo_guard *g, int dirfd, const char *shown_prefix, uid_t session_uid)
{
        struct sweep s = { .g = g, .uid = session_uid, .shown = shown_prefix };
        const struct tree_ops ops = { .pre = sweep_pre, .flags = TREE_FIX_MODES };
        return tree_walk(dirfd, &ops, &s);
}

void repo_guard_restore(struct repo_guard *g, int output_fd, uid_t session_uid)
{
        if (!g->repo || g->repo_fd < 0) /* never opened (a zeroed guard) */
                return;
        if (g->q.out_fd < 0 && output_fd >= 0)
                g->q.out_fd = fcntl(output_fd, F_DUPFD_CLOEXEC, 3);
        g->status = GUARD_RESTORED;
        int r = g->dotgit == 'f' && g->common ? rebuild_common(g) : rebuild_git(g);
        if (r < 0) {
                if (g->dotgit == 'f' && g->common) {
                        /* The common directory is shared with the host's other
                         * worktrees: it cannot be moved away; this one's link to it is. */
                        quarantine_dotgit(g);
                        g->status = GUARD_FAILED;
                } else {
                        quarantine_dotgit(g);
                }
        }
        if (g->status == GUARD_RESTORED && g->dotgit == 'd') {
                _cleanup_close_ int fd = openat(g->repo_fd, ".git", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd >= 0 && repo_guard_clear_setuid(g, fd, ".git/", session_uid) < 0)
                        g->status = GUARD_FAILED;
        }
        if (fix_paths(g) < 0)
                g->status = GUARD_FAILED;
        struct scan s = { .g = g, .uid = session_uid };
        const struct tree_ops ops = { .pre = scan_pre, .post = scan_post, .flags = TREE_FIX_MODES };
        r = tree_walk(g->repo_fd, &ops, &s);
        free(s.bare);
        if (r < 0) {
                note_failure(g, r, "cannot walk the repository '%s' after the session", g->repo);
                g->status = GUARD_FAILED;
        }
}

/* ---- the record as JSON ---- */

static json_object *jstr(const char *s) { return s ? json_object_new_string(s) : NULL; }

/* `n` items of a list through `one`, at most REPO_GUARD_LIST_MAX; the rest counted in `more_key`. */
static void add_list(json_object *o, const char *key, const char *more_key, size_t n,
                     json_object *(*one)(const void *list, size_t i), const void *list)
{
        json_object *a = json_object_new_array();
        for (size_t i = 0; i < n && i < REPO_GUARD_LIST_MAX; i++)
                json_object_array_add(a, one(list, i));
        json_object_object_add(o, key, a);
        if (more_key)
                json_object_object_add(o, more_key,
                                       json_object_new_int64(n > REPO_GUARD_LIST_MAX ? (int64_t)(n - REPO_GUARD_LIST_MAX) : 0));
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
        add_list(o, "moved", "moved_more", g->n_moved, one_move, g->moved);
        add_list(o, "restored", "restored_more", g->restored.n, one_string, g->restored.v);
        add_list(o, "setuid_cleared", "setuid_cleared_more", g->setuid_cleared.n, one_string, g->setuid_cleared.v);
        json_object_object_add(o, "control_files_total", json_object_new_int64((int64_t)g->n_changes));
        json_object_object_add(o, "special_files_total", json_object_new_int64((int64_t)g->n_special));
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
        _cleanup_free_ char *p = shown(s->path);
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
        int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
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
        int r = fflush(f) == 0 ? 0 : -errno;
        fclose(f);
        return r;
}

void repo_guard_done(struct repo_guard *g)
{
        if (!g->repo) { /* never opened: a zeroed guard's fds are not its */
                *g = (struct repo_guard){ .repo_fd = -1, .common_fd = -1, .q = QUARANTINE_INIT };
                return;
        }
        if (g->repo_fd >= 0)
                close(g->repo_fd);
        if (g->common_fd >= 0)
                close(g->common_fd);
        if (g->q.out_fd >= 0)
                close(g->q.out_fd);
        quarantine_done(&g->q);
        snapshot_done(&g->snap);
        strv_done(&g->modules);
        strv_done(&g->host_paths);
        strv_done(&g->tool_paths);
        strv_done(&g->restored);
        strv_done(&g->setuid_cleared);
        for (size_t i = 0; i < g->n_seen; i++) {
                free(g->seen[i].path);
                free(g->seen[i].data);
        }
        free(g->seen);
        for (size_t i = 0; i < g->n_moved; i++) {
                free(g->moved[i].path);
                free(g->moved[i].to);
        }
        free(g->moved);
        for (size_t i = 0; i < g->n_changes; i++) {
                free(g->changes[i].path);
                free(g->changes[i].saved);
        }
        free(g->changes);
        for (size_t i = 0; i < g->n_special; i++) {
                free(g->special[i].path);
                free(g->special[i].data);
        }
        free(g->special);
        free(g->repo);
        free(g->common);
        free(g->worktree);
        free(g->refused);
        *g = (struct repo_guard){ .repo_fd = -1, .common_fd = -1, .q = QUARANTINE_INIT };
}
