#define _GNU_SOURCE
#include "gitguard/repo_guard.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "gitguard/hostgit.h"
#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/error.h"
#include "base/fileio.h"
#include "base/macro.h"
#include "base/path.h"
#include "base/str.h"
#include "base/strv.h"

/* The files that make git run a program or read another config, per git
 * directory (the common one and each submodule's). */
static const char *const control_files[] = { "config", "config.worktree", "commondir", "objects/info/alternates" };
/* The same, per linked worktree (C/worktrees/<name>). */
static const char *const worktree_files[] = { "commondir", "gitdir", "config.worktree" };
/* Submodules nest (modules/a/modules/b) and their names may hold '/'. */
#define MAX_DEPTH 8
#define MAX_ENTRIES 256
/* An embedded repository's `.git` may be anywhere in the worktree. */
#define MAX_WALK_DEPTH 64


/* ---- reading what a session may have planted ---- */

/* The regular file `name` in `dirfd`, never following a link or blocking on
 * a FIFO, up to `max` bytes: malloc'd (NUL-terminated), or NULL with errno
 * (EFBIG when larger, EINVAL when not a regular file): read_file_at with the mode. */
static char *read_at(int dirfd, const char *name, size_t max, size_t *len_out, mode_t *mode_out)
{
        struct stat st;
        char *buf = read_file_at(dirfd, name, max, len_out, &st);
        if (buf && mode_out)
                *mode_out = st.st_mode & 07777;
        return buf;
}

/* What trialbox makes or restores in a repository is its owner's, as when
 * git made it: trialbox may run as root for another user's repository. Not
 * root, it is ours already, and the error says nothing. */
static void give_back(int dirfd, const char *name, uid_t uid, gid_t gid)
{
        int r = fchownat(dirfd, name, uid, gid, AT_SYMLINK_NOFOLLOW);
        (void)r;
}

static int open_dir_at(int dirfd, const char *name)
{
        return openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
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

/* Remove `name` in `dirfd` whatever it is, folders recursively, never
 * following a link. */
static int rm_rf_at(int dfd, const char *name, int depth)
{
        if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
                return 0;
        if (errno != EISDIR && errno != EPERM)
                return -errno;
        int sub = open_dir_at(dfd, name);
        if (sub < 0)
                return -errno;
        DIR *d = fdopendir(sub);
        if (!d) {
                close(sub);
                return -errno;
        }
        int r = 0;
        for (struct dirent *e; r == 0 && depth < 64 && (e = readdir(d));)
                if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                        r = rm_rf_at(dirfd(d), e->d_name, depth + 1);
        closedir(d);
        if (r == 0 && unlinkat(dfd, name, AT_REMOVEDIR) < 0)
                r = -errno;
        return r;
}

/* The names in a folder (not "." and ".."), at most `max`. */
static void list_max_at(int dirfd, const char *name, struct strv *out, size_t max)
{
        int fd = open_dir_at(dirfd, name);
        if (fd < 0)
                return;
        DIR *d = fdopendir(fd);
        if (!d) {
                close(fd);
                return;
        }
        for (struct dirent *e; out->n < max && (e = readdir(d));)
                if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                        strv_add(out, e->d_name);
        closedir(d);
}

static void list_at(int dirfd, const char *name, struct strv *out)
{
        list_max_at(dirfd, name, out, MAX_ENTRIES);
}

/* ---- the worktree's common directory ---- */

/* A git directory's HEAD as git takes it: a regular file, or a link (git
 * follows one into refs/). */
static bool has_head_at(int fd)
{
        struct stat st;
        return fstatat(fd, "HEAD", &st, AT_SYMLINK_NOFOLLOW) == 0 && (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode));
}

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
        return TAKE_PTR(c);
}

/* ---- before the session ---- */

static void add_file(struct repo_guard *g, const char *rel, bool existed, char *data, size_t len, mode_t mode)
{
        GREEDY_REALLOC(g->files, g->cap_files, g->n_files + 1);
        g->files[g->n_files++] = (struct repo_guard_file){
                .rel = xstrdup(rel), .existed = existed, .data = data, .len = len, .mode = mode
        };
}

/* Walk `rel` (relative, '/'-separated) from `dirfd` to its parent folder,
 * never following a link: an fd, or -1. *leaf points into rel. */
static int open_parent(int dirfd, const char *rel, const char **leaf)
{
        int fd = dup(dirfd);
        const char *p = rel;
        for (const char *slash; fd >= 0 && (slash = strchr(p, '/')); p = slash + 1) {
                _cleanup_free_ char *part = strndup(p, (size_t)(slash - p));
                int next = open_dir_at(fd, part);
                close(fd);
                fd = next;
        }
        *leaf = p;
        return fd;
}

static int snap_file(struct repo_guard *g, int dirfd, const char *prefix, const char *name, struct tb_error *err)
{
        _cleanup_free_ char *rel = xasprintf("%s%s", prefix, name);
        const char *leaf;
        _cleanup_close_ int pfd = open_parent(dirfd, name, &leaf);
        struct stat st;
        if (pfd < 0 || fstatat(pfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                add_file(g, rel, false, NULL, 0, 0);
                return 0;
        }
        size_t len = 0;
        mode_t mode = 0;
        char *data = read_at(pfd, leaf, REPO_GUARD_MAX_FILE, &len, &mode);
        if (!data)
                return tb_fail(err, -EINVAL,
                               "'%s/%s' is not a regular file of at most %zu KiB; trialbox can protect only such git "
                               "files: make it one",
                               g->common, rel, REPO_GUARD_MAX_FILE / 1024);
        add_file(g, rel, true, data, len, mode);
        g->files[g->n_files - 1].uid = st.st_uid;
        g->files[g->n_files - 1].gid = st.st_gid;
        strv_addf(&g->ro, "%s/%s", g->common, rel);
        return 0;
}

static void snap_hooks(struct repo_guard *g, int dirfd, const char *prefix, bool make)
{
        GREEDY_REALLOC(g->hooks, g->cap_hooks, g->n_hooks + 1);
        struct repo_guard_hooks *h = &g->hooks[g->n_hooks++];
        *h = (struct repo_guard_hooks){ .rel = xasprintf("%shooks", prefix) };
        struct stat st;
        /* bwrap needs a mount point for the read-only bind: an empty hooks
         * folder is what `git init` makes anyway. */
        if (make && mkdirat(dirfd, "hooks", 0755) == 0) {
                /* Trialbox run as root for another user's repository: the
                 * folder is the repository owner's, as git would have made it. */
                struct stat gd;
                if (fstat(dirfd, &gd) == 0)
                        give_back(dirfd, "hooks", gd.st_uid, gd.st_gid);
        }
        if (fstatat(dirfd, "hooks", &st, AT_SYMLINK_NOFOLLOW) < 0 || !(S_ISDIR(st.st_mode) || S_ISLNK(st.st_mode)))
                return;
        h->existed = true;
        h->dev = st.st_dev;
        h->ino = st.st_ino;
        _cleanup_free_ char *path = xasprintf("%s/%s", g->common, h->rel);
        if (S_ISLNK(st.st_mode)) {
                /* The host's own link (to a folder of the worktree, often):
                 * that folder is what must stay as it is. */
                h->link = true;
                char buf[PATH_MAX];
                ssize_t n = readlinkat(dirfd, "hooks", buf, sizeof buf - 1);
                if (n > 0) {
                        buf[n] = '\0';
                        strv_add(&h->names, buf);
                }
                _cleanup_free_ char *target = realpath(path, NULL);
                if (target && path_is_under(target, g->repo) && strcmp(target, g->repo) != 0 && is_dir_at(AT_FDCWD, target))
                        strv_add(&g->ro, target);
                return;
        }
        list_max_at(dirfd, "hooks", &h->names, SIZE_MAX);
        strv_add(&g->ro, path);
}

static int snap_modules(struct repo_guard *g, int dirfd, const char *prefix, int depth, bool make,
                        struct tb_error *err);

/* One git directory (the common one, a submodule's) at `dirfd`. */
static int snap_gitdir(struct repo_guard *g, int dirfd, const char *prefix, int depth, bool make,
                       struct tb_error *err)
{
        for (size_t i = 0; i < TB_ARRAY_SIZE(control_files); i++) {
                int r = snap_file(g, dirfd, prefix, control_files[i], err);
                if (r < 0)
                        return r;
        }
        snap_hooks(g, dirfd, prefix, make);
        _cleanup_free_ char *mprefix = xasprintf("%smodules/", prefix);
        _cleanup_close_ int mfd = open_dir_at(dirfd, "modules");
        if (mfd >= 0) {
                strv_addf(&g->pins, "%s/%smodules", g->common, prefix);
                return snap_modules(g, mfd, mprefix, depth + 1, make, err);
        }
        return 0;
}

static int snap_modules(struct repo_guard *g, int dirfd, const char *prefix, int depth, bool make,
                        struct tb_error *err)
{
        struct strv names = { 0 };
        int r = 0;
        list_at(dirfd, ".", &names);
        for (size_t i = 0; r == 0 && depth < MAX_DEPTH && i < names.n; i++) {
                _cleanup_close_ int fd = open_dir_at(dirfd, names.v[i]);
                if (fd < 0)
                        continue;
                _cleanup_free_ char *sub = xasprintf("%s%s/", prefix, names.v[i]);
                strv_addf(&g->pins, "%s/%s%s", g->common, prefix, names.v[i]);
                r = has_head_at(fd) ? snap_gitdir(g, fd, sub, depth, make, err)
                                          : snap_modules(g, fd, sub, depth + 1, make, err);
        }
        strv_done(&names);
        return r;
}

static int snap_worktrees(struct repo_guard *g, struct tb_error *err)
{
        struct strv names = { 0 };
        int r = 0;
        _cleanup_close_ int wfd = open_dir_at(g->common_fd, "worktrees");
        if (wfd < 0)
                return 0;
        strv_addf(&g->pins, "%s/worktrees", g->common);
        list_at(wfd, ".", &names);
        for (size_t i = 0; r == 0 && i < names.n; i++) {
                _cleanup_close_ int fd = open_dir_at(wfd, names.v[i]);
                if (fd < 0)
                        continue;
                _cleanup_free_ char *prefix = xasprintf("worktrees/%s/", names.v[i]);
                strv_addf(&g->pins, "%s/worktrees/%s", g->common, names.v[i]);
                for (size_t j = 0; r == 0 && j < TB_ARRAY_SIZE(worktree_files); j++)
                        r = snap_file(g, fd, prefix, worktree_files[j], err);
                /* A linked worktree's submodules live in its own git directory. */
                _cleanup_close_ int mfd = open_dir_at(fd, "modules");
                _cleanup_free_ char *mprefix = xasprintf("%smodules/", prefix);
                if (r == 0 && mfd >= 0)
                        r = snap_modules(g, mfd, mprefix, 1, false, err);
        }
        strv_done(&names);
        return r;
}

static void snap_dotgit(struct repo_guard *g)
{
        struct stat st;
        if (fstatat(g->repo_fd, ".git", &st, AT_SYMLINK_NOFOLLOW) < 0)
                return;
        g->dotgit_dev = st.st_dev;
        g->dotgit_ino = st.st_ino;
        g->dotgit_uid = st.st_uid;
        g->dotgit_gid = st.st_gid;
        if (S_ISDIR(st.st_mode)) {
                g->dotgit_kind = 'd';
                strv_addf(&g->pins, "%s/.git", g->repo);
        } else if (S_ISREG(st.st_mode)) {
                g->dotgit_data = read_at(g->repo_fd, ".git", 4096, &g->dotgit_len, NULL);
                if (g->dotgit_data) {
                        g->dotgit_kind = 'f';
                        strv_addf(&g->ro, "%s/.git", g->repo);
                }
        } else {
                g->dotgit_kind = S_ISLNK(st.st_mode) ? 'l' : 'x';
        }
}

/* A path the host's own config names, made absolute: `~/` against the
 * home, a relative one against `base`. malloc'd. */
static char *config_path_abs(const char *value, const char *base, const char *home)
{
        if (value[0] == '/')
                return xstrdup(value);
        if (str_has_prefix(value, "~/"))
                return home ? xasprintf("%s/%s", home, value + 2) : NULL;
        return xasprintf("%s/%s", base, value);
}

/* Pin each folder strictly between the repository and `real` (an absolute
 * path inside it, links resolved), and `real` itself when `inclusive`. */
static void pin_folders_to(struct repo_guard *g, const char *real, bool inclusive)
{
        if (strcmp(real, g->repo) == 0)
                return;
        _cleanup_free_ char *path = xstrdup(real);
        for (char *p = path + strlen(g->repo) + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = '\0';
                if (!strv_contains(&g->pins, path))
                        strv_add(&g->pins, path);
                *p = '/';
        }
        if (inclusive && !strv_contains(&g->pins, path))
                strv_add(&g->pins, path);
}

/* A path named by the host's config: inside the worktree (not its .git), an
 * existing file or folder is bound read-only; a missing one is watched: its
 * first missing part is renamed aside after the session if it appeared. */
static void guard_config_path(struct repo_guard *g, const char *abs)
{
        _cleanup_free_ char *probe = xstrdup(abs);
        _cleanup_free_ char *missing = NULL;
        _cleanup_free_ char *real = NULL;
        /* The deepest part that exists, and the first part that does not. */
        while (!(real = realpath(probe, NULL))) {
                char *slash = strrchr(probe, '/');
                if (errno != ENOENT || !slash || slash == probe)
                        return;
                free(missing);
                missing = xstrdup(slash + 1);
                *slash = '\0';
        }
        if (!path_is_under(real, g->repo) || (g->common && path_is_under(real, g->common)))
                return;
        /* Every folder from the repository down to it pinned (bound onto
         * itself): else the session renames one above it and makes a new
         * path in its place, which nothing after the session looks at. The
         * deepest folder that exists is pinned too when the rest is missing. */
        pin_folders_to(g, real, missing != NULL);
        if (!missing) {
                struct stat st;
                if (strcmp(real, g->repo) != 0 && lstat(real, &st) == 0 && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
                        strv_add(&g->ro, real);
                return;
        }
        if (strcmp(missing, ".") == 0 || strcmp(missing, "..") == 0)
                return;
        strv_add(&g->watch_dir, strcmp(real, g->repo) == 0 ? "" : real + strlen(g->repo) + 1);
        strv_add(&g->watch_name, missing);
}

/* The host's own config may name a hooks folder or a config to include
 * inside the worktree (husky's `core.hooksPath = .husky`, a shared
 * `include.path = ../.gitconfig`): the session could write git code there. */
static void snap_config_paths(struct repo_guard *g, const struct repo_guard_host *host)
{
        static const char *const files[] = { "config", "config.worktree" };
        _cleanup_free_ char *git = host->path ? find_on_path("git", host->path) : NULL;
        for (size_t i = 0; git && i < TB_ARRAY_SIZE(files); i++) {
                const struct repo_guard_file *f = NULL;
                for (size_t j = 0; j < g->n_files && !f; j++)
                        if (strcmp(g->files[j].rel, files[i]) == 0 && g->files[j].existed)
                                f = &g->files[j];
                if (!f)
                        continue;
                _cleanup_free_ char *file = xasprintf("%s/%s", g->common, files[i]);
                _cleanup_free_ char *out = xmalloc(REPO_GUARD_MAX_FILE);
                const char *const args[] = { "config", "--file", file, "--get-regexp",
                                             "^(core\\.hookspath|include\\.path|includeif\\..*\\.path)$", NULL };
                if (!host_git_run(git, NULL, args, out, REPO_GUARD_MAX_FILE, NULL))
                        continue;
                char *save = NULL;
                for (char *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                        char *value = strchr(line, ' ');
                        if (!value || !*++value)
                                continue;
                        bool hooks = str_has_prefix(line, "core.hookspath ");
                        _cleanup_free_ char *abs = config_path_abs(value, hooks ? g->repo : g->common, host->host_home);
                        if (abs)
                                guard_config_path(g, abs);
                }
        }
}

int repo_guard_open(struct repo_guard *g, const struct repo_guard_host *host, const struct sandbox_spec *spec,
                    struct tb_error *err)
{
        *g = (struct repo_guard){ .repo = xstrdup(host->repo), .repo_fd = -1, .common_fd = -1 };
        g->repo_fd = open(host->repo, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (g->repo_fd < 0)
                return tb_fail(err, -errno, "repository '%s': %s", host->repo, strerror(errno));
        snap_dotgit(g);
        /* A link: git follows it to control files trialbox cannot pin or
         * restore through it. (Anything else that is neither a folder nor a
         * file is no repository to git.) */
        if (g->dotgit_kind == 'l')
                return tb_fail(err, -EINVAL,
                               "'%s/.git' is a link: git would follow it to files trialbox cannot protect; make it "
                               "the git folder itself, or a 'gitdir:' file",
                               host->repo);
        if (g->dotgit_kind == 'd') {
                g->common = xasprintf("%s/.git", host->repo);
        } else if (g->dotgit_kind == 'f') {
                g->common = repo_guard_common_dir(host, spec, &g->refused);
                g->worktree = g->common != NULL;
        }
        if (!g->common)
                return 0;
        g->common_fd = open(g->common, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (g->common_fd < 0)
                return tb_fail(err, -errno, "git directory '%s': %s", g->common, strerror(errno));
        int r = snap_gitdir(g, g->common_fd, "", 0, !host->dry_run, err);
        if (r == 0)
                r = snap_worktrees(g, err);
        if (r == 0)
                snap_config_paths(g, host);
        return r;
}

void repo_guard_add_binds(const struct repo_guard *g, struct sandbox_spec *spec)
{
        if (g->worktree && !path_is_under(g->common, g->repo))
                sandbox_add(spec, SANDBOX_BIND, g->common, g->common);
        /* Pins first (a folder onto itself: it can no longer be renamed or
         * replaced), then the read-only files inside them. */
        for (size_t i = 0; i < g->pins.n; i++)
                sandbox_add(spec, SANDBOX_BIND, g->pins.v[i], g->pins.v[i]);
        for (size_t i = 0; i < g->ro.n; i++)
                sandbox_add(spec, SANDBOX_RO_BIND, g->ro.v[i], g->ro.v[i]);
}

/* ---- after the session ---- */

struct undo {
        struct repo_guard *g;
        struct strv *lines;
        struct strv gitdirs; /* the submodule git directories checked (relative) */
        int n, failed;
};

static void undo_note(struct undo *u, int r, const char *path, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
static void undo_note(struct undo *u, int r, const char *path, const char *fmt, ...)
{
        if (r < 0) {
                strv_addf(u->lines, "could not undo a change to '%s': %s; remove it by hand before running git there",
                          path, strerror(-r));
                u->failed = r;
                return;
        }
        va_list ap;
        va_start(ap, fmt);
        char *line = xvasprintf(fmt, ap);
        va_end(ap);
        strv_add_take(u->lines, line);
        u->n++;
}

static const struct repo_guard_file *find_file(const struct repo_guard *g, const char *rel)
{
        for (size_t i = 0; i < g->n_files; i++)
                if (strcmp(g->files[i].rel, rel) == 0)
                        return &g->files[i];
        return NULL;
}

static const struct repo_guard_hooks *find_hooks(const struct repo_guard *g, const char *rel)
{
        for (size_t i = 0; i < g->n_hooks; i++)
                if (strcmp(g->hooks[i].rel, rel) == 0)
                        return &g->hooks[i];
        return NULL;
}

static void check_file(struct undo *u, int dirfd, const char *prefix, const char *name)
{
        _cleanup_free_ char *rel = xasprintf("%s%s", prefix, name);
        _cleanup_free_ char *path = xasprintf("%s/%s", u->g->common, rel);
        const struct repo_guard_file *before = find_file(u->g, rel);
        const char *leaf;
        _cleanup_close_ int pfd = open_parent(dirfd, name, &leaf);
        struct stat st;
        if (pfd < 0 || fstatat(pfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return; /* gone: nothing runs from a missing file */
        size_t len = 0;
        _cleanup_free_ char *now = read_at(pfd, leaf, REPO_GUARD_MAX_FILE, &len, NULL);
        if (before && before->existed && now && len == before->len && memcmp(now, before->data, len) == 0)
                return;
        int r = rm_rf_at(pfd, leaf, 0);
        if (r == 0 && before && before->existed) {
                r = write_file_atomic_at(pfd, leaf, before->data, before->len, before->mode, 0);
                if (r == 0)
                        give_back(pfd, leaf, before->uid, before->gid);
                undo_note(u, r, path, "restored '%s' to its content before the session", path);
                return;
        }
        undo_note(u, r, path, "removed '%s', made by the session", path);
}

/* Hook files the session added (sample hooks git itself writes never run). */
static void check_hooks(struct undo *u, int dirfd, const char *prefix)
{
        _cleanup_free_ char *rel = xasprintf("%shooks", prefix);
        const struct repo_guard_hooks *before = find_hooks(u->g, rel);
        struct stat st;
        if (fstatat(dirfd, "hooks", &st, AT_SYMLINK_NOFOLLOW) < 0)
                return;
        _cleanup_free_ char *path = xasprintf("%s/%s", u->g->common, rel);
        if (before && before->link) {
                int r = rm_rf_at(dirfd, "hooks", 0);
                if (r == 0 && before->names.n == 1 && symlinkat(before->names.v[0], dirfd, "hooks") < 0)
                        r = -errno;
                undo_note(u, r, path, "restored the link '%s', replaced by the session", path);
                return;
        }
        if (!S_ISDIR(st.st_mode)) {
                undo_note(u, rm_rf_at(dirfd, "hooks", 0), path, "removed '%s', made by the session", path);
                return;
        }
        bool same = before && before->existed && before->dev == st.st_dev && before->ino == st.st_ino;
        if (same && before->link)
                return;
        struct strv names = { 0 };
        list_max_at(dirfd, "hooks", &names, SIZE_MAX);
        _cleanup_close_ int hfd = open_dir_at(dirfd, "hooks");
        for (size_t i = 0; hfd >= 0 && i < names.n; i++) {
                const char *n = names.v[i];
                size_t l = strlen(n);
                if ((same && strv_contains(&before->names, n)) || (l > 7 && strcmp(n + l - 7, ".sample") == 0 &&
                                                                   is_reg_at(hfd, n)))
                        continue;
                _cleanup_free_ char *hook = xasprintf("%s/%s", path, n);
                undo_note(u, rm_rf_at(hfd, n, 0), hook, "removed the hook '%s', made by the session", hook);
        }
        strv_done(&names);
}

static void check_modules(struct undo *u, int dirfd, const char *prefix, int depth);

static void check_gitdir(struct undo *u, int dirfd, const char *prefix, int depth)
{
        for (size_t i = 0; i < TB_ARRAY_SIZE(control_files); i++)
                check_file(u, dirfd, prefix, control_files[i]);
        check_hooks(u, dirfd, prefix);
        _cleanup_free_ char *mprefix = xasprintf("%smodules/", prefix);
        check_modules(u, dirfd, mprefix, depth + 1);
}

static void quarantine(struct undo *u, int dirfd, const char *dir, const char *name);

/* `modules` in `dirfd`: each entry a submodule's git directory (it has a
 * HEAD) or a folder of them (a name with '/'). Too deep, or not a folder:
 * removed whole. */
static void check_modules(struct undo *u, int parent, const char *prefix, int depth)
{
        _cleanup_free_ char *path = xasprintf("%s/%.*s", u->g->common, (int)strlen(prefix) - 1, prefix);
        struct stat st;
        const char *name = strrchr(path, '/') + 1;
        if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return;
        if (!S_ISDIR(st.st_mode) || depth >= MAX_DEPTH) {
                undo_note(u, rm_rf_at(parent, name, 0), path, "removed '%s', which git would read", path);
                return;
        }
        _cleanup_close_ int dirfd = open_dir_at(parent, name);
        struct strv names = { 0 };
        list_at(dirfd, ".", &names);
        for (size_t i = 0; dirfd >= 0 && i < names.n; i++) {
                _cleanup_close_ int fd = open_dir_at(dirfd, names.v[i]);
                struct stat est;
                /* A link there is the session's (git makes folders): git would
                 * follow it to a git directory of its choosing. */
                if (fd < 0 && fstatat(dirfd, names.v[i], &est, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(est.st_mode))
                        quarantine(u, dirfd, path, names.v[i]);
                if (fd < 0)
                        continue;
                _cleanup_free_ char *sub = xasprintf("%s%s/", prefix, names.v[i]);
                if (has_head_at(fd)) {
                        strv_add(&u->gitdirs, sub);
                        check_gitdir(u, fd, sub, depth);
                } else {
                        _cleanup_free_ char *subname = xasprintf("%s%s/", prefix, names.v[i]);
                        check_modules(u, dirfd, subname, depth + 1);
                }
        }
        strv_done(&names);
}

/* check_modules takes the folder's parent: the walk below names it by prefix. */
static void check_modules_in(struct undo *u, int dirfd, const char *prefix)
{
        _cleanup_free_ char *mprefix = xasprintf("%smodules/", prefix);
        check_modules(u, dirfd, mprefix, 1);
}

static void check_worktrees(struct undo *u)
{
        struct strv names = { 0 };
        _cleanup_close_ int wfd = open_dir_at(u->g->common_fd, "worktrees");
        list_at(wfd, ".", &names);
        for (size_t i = 0; wfd >= 0 && i < names.n; i++) {
                _cleanup_close_ int fd = open_dir_at(wfd, names.v[i]);
                if (fd < 0)
                        continue;
                _cleanup_free_ char *prefix = xasprintf("worktrees/%s/", names.v[i]);
                for (size_t j = 0; j < TB_ARRAY_SIZE(worktree_files); j++)
                        check_file(u, fd, prefix, worktree_files[j]);
                check_modules_in(u, fd, prefix);
        }
        strv_done(&names);
}

static void quarantine(struct undo *u, int dirfd, const char *dir, const char *name)
{
        _cleanup_free_ char *path = xasprintf("%s/%s", dir, name);
        for (int i = 1; i < 1000; i++) {
                _cleanup_free_ char *to = xasprintf("%s.trialbox-quarantine-%d", name, i);
                if (renameat2(dirfd, name, dirfd, to, RENAME_NOREPLACE) == 0) {
                        undo_note(u, 0, path, "renamed '%s', made by the session, to '%s' (git would read it)", path, to);
                        return;
                }
                if (errno != EEXIST)
                        break;
        }
        undo_note(u, errno ? -errno : -EEXIST, path, "%s", path);
}

static void check_dotgit(struct undo *u)
{
        struct repo_guard *g = u->g;
        struct stat st;
        if (fstatat(g->repo_fd, ".git", &st, AT_SYMLINK_NOFOLLOW) < 0)
                return;
        bool same = g->dotgit_kind != 0 && st.st_dev == g->dotgit_dev && st.st_ino == g->dotgit_ino;
        size_t len = 0;
        _cleanup_free_ char *now = g->dotgit_kind == 'f' ? read_at(g->repo_fd, ".git", 4096, &len, NULL) : NULL;
        if (same && g->dotgit_kind == 'f' && !(now && len == g->dotgit_len && memcmp(now, g->dotgit_data, len) == 0))
                same = false;
        if (same)
                return;
        quarantine(u, g->repo_fd, g->repo, ".git");
        if (g->dotgit_kind == 'f') {
                int r = write_file_atomic_at(g->repo_fd, ".git", g->dotgit_data, g->dotgit_len, 0644, 0);
                if (r == 0)
                        give_back(g->repo_fd, ".git", g->dotgit_uid, g->dotgit_gid);
                _cleanup_free_ char *path = xasprintf("%s/.git", g->repo);
                undo_note(u, r, path, "restored '%s' to its content before the session", path);
        }
}

/* Is the `.git` file in `dirfd` a submodule's, naming a git directory under
 * `modules/` that check_modules has just checked, or that of a worktree the
 * host had made? */
static bool is_checked_submodule(struct undo *u, int dirfd, const char *dir)
{
        _cleanup_free_ char *target = dotgit_target(dirfd, dir);
        _cleanup_free_ char *real = target ? realpath(target, NULL) : NULL;
        if (!real || !u->g->common || !path_is_under(real, u->g->common) || strcmp(real, u->g->common) == 0)
                return false;
        _cleanup_free_ char *rel = xasprintf("%s/", real + strlen(u->g->common) + 1);
        if (strv_contains(&u->gitdirs, rel))
                return true;
        /* A linked worktree of the host's inside this one: its entry was
         * there before, and check_worktrees has just checked it. */
        _cleanup_free_ char *commondir = xasprintf("%scommondir", rel);
        const struct repo_guard_file *f = find_file(u->g, commondir);
        return str_has_prefix(rel, "worktrees/") && strchr(rel + strlen("worktrees/"), '/') == rel + strlen(rel) - 1 &&
               f && f->existed;
}

/* Embedded repositories: a `.git` below the top of the worktree. */
static void check_embedded(struct undo *u, int dirfd, const char *dir, int depth)
{
        struct strv names = { 0 };
        list_max_at(dirfd, ".", &names, SIZE_MAX);
        for (size_t i = 0; i < names.n; i++) {
                const char *n = names.v[i];
                if (strcmp(n, ".git") == 0) {
                        if (depth > 0 && !is_checked_submodule(u, dirfd, dir))
                                quarantine(u, dirfd, dir, n);
                        continue;
                }
                if (depth >= MAX_WALK_DEPTH)
                        continue;
                _cleanup_close_ int fd = open_dir_at(dirfd, n);
                if (fd < 0)
                        continue;
                _cleanup_free_ char *sub = xasprintf("%s/%s", dir, n);
                check_embedded(u, fd, sub, depth + 1);
        }
        strv_done(&names);
}

/* The hooks folders and included configs the host's config names in the
 * worktree that did not exist: made by the session, renamed aside. */
static void check_watched(struct undo *u)
{
        struct repo_guard *g = u->g;
        for (size_t i = 0; i < g->watch_dir.n; i++) {
                const char *dir = g->watch_dir.v[i];
                _cleanup_free_ char *rel = xasprintf("%s%s.", dir, dir[0] ? "/" : "");
                const char *leaf;
                _cleanup_close_ int pfd = open_parent(g->repo_fd, rel, &leaf);
                struct stat st;
                if (pfd < 0 || fstatat(pfd, g->watch_name.v[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                _cleanup_free_ char *where = dir[0] ? xasprintf("%s/%s", g->repo, dir) : xstrdup(g->repo);
                quarantine(u, pfd, where, g->watch_name.v[i]);
        }
}

int repo_guard_restore(struct repo_guard *g, struct strv *undone)
{
        struct undo u = { .g = g, .lines = undone };
        if (!g->repo || g->repo_fd < 0)
                return 0; /* never opened (a zeroed guard) */
        check_dotgit(&u);
        if (g->common_fd >= 0) {
                for (size_t i = 0; i < TB_ARRAY_SIZE(control_files); i++)
                        check_file(&u, g->common_fd, "", control_files[i]);
                check_hooks(&u, g->common_fd, "");
                check_modules_in(&u, g->common_fd, "");
                check_worktrees(&u);
        }
        check_watched(&u);
        check_embedded(&u, g->repo_fd, g->repo, 0);
        strv_done(&u.gitdirs);
        return u.failed < 0 ? u.failed : u.n;
}

void repo_guard_done(struct repo_guard *g)
{
        for (size_t i = 0; i < g->n_files; i++) {
                free(g->files[i].rel);
                free(g->files[i].data);
        }
        free(g->files);
        for (size_t i = 0; i < g->n_hooks; i++) {
                free(g->hooks[i].rel);
                strv_done(&g->hooks[i].names);
        }
        free(g->hooks);
        strv_done(&g->pins);
        strv_done(&g->ro);
        strv_done(&g->watch_dir);
        strv_done(&g->watch_name);
        /* A zeroed guard that was never opened holds no fds (0 is not one). */
        if (g->repo) {
                tb_closep(&g->repo_fd);
                tb_closep(&g->common_fd);
        }
        free(g->repo);
        free(g->common);
        free(g->dotgit_data);
        free(g->refused);
        *g = (struct repo_guard){ .repo_fd = -1, .common_fd = -1 };
}
