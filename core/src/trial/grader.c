#define _GNU_SOURCE
#include "trial/grader.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/log.h"
#include "sandbox/session_user.h"

/* The layer to make: the one asked for, or the best that works here. 0, or
 * a negative errno with `err` when the one asked for cannot be had. */
static int pick_layer(struct trial_grader *g, const struct grader_host *h, struct tb_error *err)
{
        if (g->layer == COW_AUTO || g->layer == COW_BWRAP_OVERLAY) {
                if (cow_bwrap_has_overlay(h->bwrap)) {
                        g->layer_used = COW_BWRAP_OVERLAY;
                        return 0;
                }
                if (g->layer == COW_BWRAP_OVERLAY)
                        return tb_fail(err, -EOPNOTSUPP,
                                       "the layer 'bwrap-overlay' needs a bwrap with --tmp-overlay (bubblewrap 0.11 "
                                       "or later, not setuid), and '%s' has none; use the layer 'auto'",
                                       h->bwrap);
        }
        if (g->layer == COW_AUTO || g->layer == COW_OVERLAYFS) {
                struct sandbox_cow cow = { .path = (char *)h->repo, .size = h->size };
                struct tb_error probe = { 0 };
                int r = cow_overlay_probe(&cow, &probe);
                if (r == 0) {
                        g->layer_used = COW_OVERLAYFS;
                        return 0;
                }
                if (g->layer == COW_OVERLAYFS)
                        return tb_fail(err, r, "%s; use the layer 'auto'", probe.msg);
                log_info("%s; the grader gets a copy of the repository", probe.msg);
        }
        g->layer_used = COW_COPY;
        return 0;
}

/* A throwaway copy of the repository in OUTPUT_DIR/layer. */
static int make_copy(struct trial_grader *g, const struct grader_host *h, char **copy, struct tb_error *err)
{
        *copy = xasprintf("%s/%s", h->output, GRADER_COPY_FOLDER);
        if (h->dry_run)
                return 0;
        long long start = now_ms();
        _cleanup_close_ int out = open(h->output, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int r = out < 0 ? -errno : tree_clone_at(AT_FDCWD, h->repo, out, GRADER_COPY_FOLDER, &g->copy);
        if (r < 0)
                return tb_fail(err, r, "cannot copy the repository '%s' to '%s' for the grader: %s", h->repo, *copy,
                               strerror(-r));
        log_info("the grader's copy of '%s' in %lld ms: %zu files (%zu with shared blocks), %zu folders, %zu links, "
                 "%zu left out",
                 h->repo, now_ms() - start, g->copy.files, g->copy.reflinked, g->copy.dirs, g->copy.links,
                 g->copy.skipped);
        return 0;
}

/* The repository at its own path, through the layer. */
static int add_layer(struct trial_grader *g, const struct grader_host *h, struct sandbox_spec *spec,
                     struct tb_error *err)
{
        long long start = now_ms();
        int r = pick_layer(g, h, err);
        if (r < 0)
                return r;
        switch (g->layer_used) {
        case COW_BWRAP_OVERLAY:
                sandbox_add(spec, SANDBOX_TMP_OVERLAY, h->repo, h->repo);
                break;
        case COW_OVERLAYFS:
                free(spec->cow.path);
                spec->cow = (struct sandbox_cow){ .path = xstrdup(h->repo), .size = h->size };
                sandbox_add(spec, SANDBOX_BIND, h->repo, h->repo);
                break;
        default: {
                _cleanup_free_ char *copy = NULL;
                r = make_copy(g, h, &copy, err);
                if (r < 0)
                        return r;
                sandbox_add(spec, SANDBOX_BIND, copy, h->repo);
        }
        }
        g->layer_ms = now_ms() - start;
        return 0;
}

/* OUTPUT_DIR/verdict, the session user's, bound at GRADER_VERDICT_DIR. */
static int add_verdict(struct trial_grader *g, const struct grader_host *h, struct sandbox_spec *spec,
                       struct tb_error *err)
{
        _cleanup_free_ char *dir = xasprintf("%s/%s", h->output, GRADER_VERDICT_FOLDER);
        if (!h->dry_run) {
                _cleanup_close_ int out = open(h->output, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (out < 0 || mkdirat(out, GRADER_VERDICT_FOLDER, 0700) < 0 ||
                    (g->verdict_fd = openat(out, GRADER_VERDICT_FOLDER,
                                            O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
                        return tb_fail(err, -errno, "cannot make the grader's verdict folder '%s': %s", dir,
                                       strerror(errno));
                if (h->user && h->user->drop && fchown(g->verdict_fd, h->user->uid, h->user->gid) < 0)
                        return tb_fail(err, -errno, "cannot give the verdict folder '%s' to '%s': %s", dir,
                                       h->user->name, strerror(errno));
        }
        sandbox_add(spec, SANDBOX_BIND, dir, GRADER_VERDICT_DIR);
        sandbox_setenv(spec, "TRIALBOX_GRADE_FILE", GRADER_VERDICT_DIR "/" GRADER_VERDICT_FILE, false);
        return 0;
}

static int add_files(const struct trial_grader *g, const struct grader_host *h, struct sandbox_spec *spec,
                     struct tb_error *err)
{
        if (!g->files)
                return 0;
        if (h->user && h->user->drop && !session_user_can(h->user, g->files, R_OK | X_OK))
                return tb_fail(err, -EACCES,
                               "the grader runs as '%s', who cannot read its files '%s'; make them readable to it",
                               h->user->name, g->files);
        sandbox_add(spec, SANDBOX_RO_BIND, g->files, GRADER_FILES_DIR);
        sandbox_setenv(spec, "TRIALBOX_GRADER_FILES", GRADER_FILES_DIR, false);
        return 0;
}

static void add_env(const struct trial_grader *g, struct sandbox_spec *spec)
{
        if (g->trial_outcome)
                sandbox_setenv(spec, "TRIALBOX_TRIAL_OUTCOME", g->trial_outcome, false);
        for (char *const *e = g->env; e && *e; e++) {
                const char *eq = strchr(*e, '=');
                if (!eq)
                        continue;
                _cleanup_free_ char *name = strndup(*e, (size_t)(eq - *e));
                if (name && sandbox_env_name_valid(name))
                        sandbox_setenv(spec, name, eq + 1, false);
        }
}

int grader_spec(struct trial_grader *g, const struct grader_host *h, struct sandbox_spec *spec, struct tb_error *err)
{
        int r = add_layer(g, h, spec, err);
        if (r == 0)
                r = add_files(g, h, spec, err);
        if (r == 0)
                r = add_verdict(g, h, spec, err);
        if (r == 0)
                add_env(g, spec);
        return r;
}

/* ---- after the session ---- */

struct sweep {
        uid_t uid;
};

/* What the grader left with a setuid or setgid bit (its home, its verdict
 * folder): cleared, as the guard does for a Trial's output folder. */
static int sweep_pre(struct tree_dir *d, void *ctx)
{
        const struct sweep *s = ctx;
        for (size_t i = 0; i < d->n; i++) {
                struct stat st;
                if (d->v[i].type != DT_REG || fstatat(d->fd, d->v[i].name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                    !S_ISREG(st.st_mode) || !(st.st_mode & (S_ISUID | S_ISGID)))
                        continue;
                if (st.st_uid != s->uid && st.st_nlink != 1)
                        continue;
                if (fchmodat(d->fd, d->v[i].name, st.st_mode & 0777, 0) < 0)
                        log_warn("cannot clear the setuid bit of '%s' in the grader's output: %s", d->v[i].name,
                                 strerror(errno));
        }
        return 0;
}

void grader_after(struct trial_grader *g, const char *output, uid_t uid)
{
        _cleanup_close_ int out = output ? open(output, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
        if (out < 0)
                return;
        if (g->layer_used == COW_COPY) {
                long long start = now_ms();
                int r = tree_remove_at(out, GRADER_COPY_FOLDER);
                if (r < 0)
                        log_warn("cannot remove the grader's copy '%s/%s': %s", output, GRADER_COPY_FOLDER,
                                 strerror(-r));
                else
                        log_info("the grader's copy removed in %lld ms", now_ms() - start);
        }
        struct sweep s = { .uid = uid };
        static const struct tree_ops ops = { .pre = sweep_pre, .flags = TREE_FIX_MODES };
        if (tree_walk(out, &ops, &s) < 0)
                log_warn("cannot clear the setuid bits in the grader's output '%s'", output);
}
