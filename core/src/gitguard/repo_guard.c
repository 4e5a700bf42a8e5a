#define _GNU_SOURCE
#include "gitguard/repo_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/macro.h"
#include "gitguard/guard_internal.h"

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
        if (g->dotgit == 'd') {
                g->common = xasprintf("%s/.git", host->repo);
        } else if (g->dotgit == 'f') {
                g->common = repo_guard_common_dir(host, spec, &g->refused);
                if (g->common) {
                        /* Its own git directory is C/worktrees/NAME (proven above): the name. */
                        _cleanup_free_ char *gd = guard_read_line_at(g->repo_fd, ".git");
                        const char *slash = gd ? strrchr(gd, '/') : NULL;
                        g->worktree = slash && slash[1] ? xstrdup(slash + 1) : NULL;
                }
        }
        if (g->common) {
                g->common_fd = open(g->common, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (g->common_fd < 0 || fstat(g->common_fd, &st) < 0)
                        return tb_fail(err, -errno, "git directory '%s': %s", g->common, strerror(errno));
                g->git_dev = st.st_dev;
                g->git_ino = st.st_ino;
        }
        return 0;
}

int repo_guard_snapshot(struct repo_guard *g, const struct repo_guard_host *host, struct tb_error *err)
{
        int r = 0;
        if (g->dotgit == 'f')
                r = snapshot_add(&g->snap, g->repo_fd, ".git", "dotgit");
        if (r == 0 && g->common_fd >= 0)
                r = guard_snap_gitdir(g, g->common_fd, "git:", "", 0, err);
        if (r < 0)
                return err->msg[0] ? r : tb_fail(err, r, "cannot keep '%s/.git': %s", host->repo, strerror(-r));
        guard_find_host_paths(g, host);
        guard_find_link_targets(g);
        for (size_t i = 0; r == 0 && i < g->host_paths.n; i++)
                r = guard_snap_path(g, "host:", g->host_paths.v[i]);
        if (r == 0)
                r = guard_snap_tool_files(g);
        if (r == 0) {
                const struct tree_ops ops = { .pre = guard_seen_pre };
                r = tree_walk(g->repo_fd, &ops, g);
                tb_qsort(g->seen, g->n_seen, sizeof *g->seen, guard_cmp_seen);
        }
        if (r == 0 && g->dotgit == 'd') { /* the git folder's folders too: its rebuild and setuid sweep skip those unchanged */
                g->git_nlink_exact = guard_nlink_exact(g->common_fd);
                const struct tree_ops ops = { .pre = guard_gitdirs_pre };
                r = tree_walk(g->common_fd, &ops, g);
        }
        guard_sort_dirs(g);
        if (r == -E2BIG)
                return tb_fail(err, r, "the control files of '%s' are more than trialbox can keep (%zu); remove what "
                               "is not needed",
                               host->repo, (size_t)SNAPSHOT_MAX_ITEMS);
        if (r < 0)
                return tb_fail(err, r, "cannot read the repository '%s' before the session: %s", host->repo,
                               strerror(-r));
        g->snapped = true;
        return 0;
}

void repo_guard_add_binds(const struct repo_guard *g, struct sandbox_spec *spec)
{
        if (g->worktree && g->common && !path_is_under(g->common, g->repo))
                sandbox_add(spec, SANDBOX_BIND, g->common, g->common);
}


void repo_guard_restore(struct repo_guard *g, int output_fd, uid_t session_uid)
{
        if (!g->repo || g->repo_fd < 0 || !g->snapped) /* never opened (a zeroed guard), or no snapshot */
                return;
        if (g->q.out_fd < 0 && output_fd >= 0)
                g->q.out_fd = fcntl(output_fd, F_DUPFD_CLOEXEC, 3);
        g->status = GUARD_RESTORED;
        int r = g->dotgit == 'f' && g->common ? guard_rebuild_common(g) : guard_rebuild_git(g);
        if (r < 0) {
                if (g->dotgit == 'f' && g->common) {
                        /* The common directory is shared with the host's other
                         * worktrees: it cannot be moved away; this one's link to it is. */
                        guard_quarantine_dotgit(g);
                        g->status = GUARD_FAILED;
                } else {
                        guard_quarantine_dotgit(g);
                }
        }
        if (g->status == GUARD_RESTORED && g->dotgit == 'd') {
                _cleanup_close_ int fd = openat(g->repo_fd, ".git", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd >= 0 && repo_guard_clear_setuid(g, fd, ".git/", session_uid) < 0)
                        g->status = GUARD_FAILED;
        }
        if (guard_fix_paths(g) < 0)
                g->status = GUARD_FAILED;
        r = guard_scan_worktree(g, session_uid);
        if (r < 0) {
                guard_note_failure(g, r, "cannot walk the repository '%s' after the session", g->repo);
                g->status = GUARD_FAILED;
        }
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
        free(g->dirs);
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

