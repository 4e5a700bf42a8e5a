/* A linked worktree's common git directory, proven before it is bound
 * (gitguard/repo_guard.h: repo_guard_common_dir). */
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

/* ---- the worktree's common directory ---- */

static bool is_git_dir(const char *dir)
{
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
        return fd >= 0 && guard_is_reg_at(fd, "HEAD") && guard_is_dir_at(fd, "objects") && guard_is_dir_at(fd, "refs");
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
        _cleanup_free_ char *content = guard_read_at(repo_fd, ".git", 4096, &len, NULL);
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
        if (repo_fd < 0 || !guard_is_reg_at(repo_fd, ".git"))
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
        _cleanup_free_ char *common = guard_read_line_at(g_fd, "commondir");
        _cleanup_free_ char *back = guard_read_line_at(g_fd, "gitdir");
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
