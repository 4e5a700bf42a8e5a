#define _GNU_SOURCE
#include "trial/trial.h"

#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>

#include "limits/cgroup.h"
#include "sandbox/confine.h"
#include "sandbox/host_sockets.h"
#include "base/env.h"
#include "base/phase.h"
#include "plugin/host.h"
#include "base/log.h"
#include "model/outcome.h"
#include "plugin/loader.h"
#include "gitguard/identity.h"
#include "gitguard/repo_guard.h"
#include "model/job.h"
#include "sandbox/session_user.h"
#include "sandbox/supervisor.h"
#include "sandbox/toolchain.h"
#include "trial/grader.h"
#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/macro.h"
#include "base/path.h"
#include "base/shared_child.h"
#include "base/sink.h"
#include "trial/session_env.h"
#include "base/strv.h"

static void add_allowed(struct sandbox_spec *spec, const struct tb_env *env, const char *list)
{
        _cleanup_free_ char *copy = xstrdup(list);
        char *save = NULL;
        for (char *name = strtok_r(copy, ":, ", &save); name; name = strtok_r(NULL, ":, ", &save)) {
                const char *v = tb_env_get(env, name);
                if (v && sandbox_env_name_valid(name))
                        sandbox_setenv(spec, name, v, false);
        }
}

void trial_add_allowed_env(struct sandbox_spec *spec, const struct tb_env *env, bool sandboxed)
{
        sandbox_setenv(spec, "PATH", env->path, false);
        add_allowed(spec, env, TRIAL_ENV_ALLOW);
        /* Unsandboxed, the session shares the real home and its layout. */
        if (!sandboxed)
                add_allowed(spec, env,
                            "HOME:XDG_CONFIG_HOME:XDG_CACHE_HOME:XDG_DATA_HOME:XDG_STATE_HOME:XDG_RUNTIME_DIR");
        if (env->env_allow)
                add_allowed(spec, env, env->env_allow);
}

/* `p` made absolute against the working folder, links not resolved. */
static char *make_absolute(const char *p)
{
        char cwd[PATH_MAX];
        if (p[0] == '/')
                return xstrdup(p);
        return xasprintf("%s/%s", getcwd(cwd, sizeof cwd) ? cwd : ".", p);
}

/* The real path `p` will have, malloc'd into *out: its existing part
 * resolved (links followed, through `memo`), the parts that do not exist
 * yet appended. 0, or -EINVAL for a "." or ".." among those. */
static int resolve_new_path(struct path_memo *memo, const char *p, char **out)
{
        *out = path_memo_realpath(memo, p);
        if (*out)
                return 0;
        _cleanup_free_ char *abs = make_absolute(p);
        size_t n = strlen(abs);
        while (n > 1 && abs[n - 1] == '/')
                abs[--n] = '\0';
        char *slash = strrchr(abs, '/');
        const char *last = slash + 1;
        if (!*last || strcmp(last, ".") == 0 || strcmp(last, "..") == 0)
                return -EINVAL;
        /* Resolve the parent, then put the last part back on it. */
        *slash = '\0';
        _cleanup_free_ char *parent_real = NULL;
        int r = resolve_new_path(memo, slash == abs ? "/" : abs, &parent_real);
        *slash = '/';
        if (r < 0)
                return r;
        *out = xasprintf("%s/%s", strcmp(parent_real, "/") == 0 ? "" : parent_real, last);
        return 0;
}

/* Only the home itself: the XDG folders its variables name are made by
 * whoever first needs them (each mkdir costs a Trial's start-up time). */
static int make_fresh_home(const char *home)
{
        return mkdir(home, 0700) < 0 ? -errno : 0;
}

static void set_home_env(struct sandbox_spec *spec, const char *home)
{
        static const char *const xdg[][2] = {
                { "XDG_CONFIG_HOME", ".config" },
                { "XDG_CACHE_HOME", ".cache" },
                { "XDG_DATA_HOME", ".local/share" },
                { "XDG_STATE_HOME", ".local/state" },
        };
        sandbox_setenv(spec, "HOME", home, false);
        for (size_t i = 0; i < TB_ARRAY_SIZE(xdg); i++) {
                _cleanup_free_ char *p = xasprintf("%s/%s", home, xdg[i][1]);
                sandbox_setenv(spec, xdg[i][0], p, false);
        }
}

static char *find_bwrap(const struct tb_env *env)
{
        const char *over = env->bwrap;
        if (over && *over)
                return access(over, X_OK) == 0 ? xstrdup(over) : NULL;
        return find_on_path("bwrap", env->path);
}

/* Everything a Trial holds, freed in one place. */
struct trial {
        const struct trial_options *opt;
        const struct tb_env *env;
        char *repo, *output, *home, *user_home, *bin, *bwrap, *skills;
        struct plugin plugin;
        struct sandbox_spec spec;
        struct tb_host host;
        struct outcome outcome;
        enum outcome_cause cause; /* why the Trial is void, when a step failed */
        struct repo_guard guard;
        long long start_ms;
        /* Limits and the record. */
        struct cgroup_probe *probe; /* when a limit needs a cgroup (17 KiB: not on the stack for every Trial) */
        struct cgroup *cgroup;     /* the Trial's, from bwrap's start (early or not) to the session's end */
        struct outcome_file final; /* the final record's reserved space */
        struct trial_net net; /* the network mode, its proxy */
        struct session_user user; /* who the session runs as */
        int home_fd;              /* the fresh home, opened when made; -1 */
        bool start_failed;        /* the guard's snapshot, the final record's space or the `running` record
                                     could not be had: the session never ran */
        struct strv session_env;  /* --env-file's "NAME=VALUE" (secrets) */
        struct host_sockets_early *sockets; /* the host's unix sockets, listed as the Trial starts */
        bool sockets_others_pending;        /* the other network namespaces' are masked in trial_start */
        bool restart;                       /* their masks came after bwrap's options: bwrap starts again */
        struct supervisor *started;         /* bwrap started early (trial_start_early), until the session takes it */
        struct supervisor *pre;             /* its keeper, started before the checks (trial_prestart) */
        bool filter_pending;                /* started early: spec.seccomp_fd reserved, its program not yet in */
};

static void trial_done(struct trial *t)
{
        supervisor_abort(TAKE_PTR(t->started));
        supervisor_prestart_cancel(TAKE_PTR(t->pre));
        /* Made for bwrap started early, for a Trial that turned void before
         * its session: empty now (its keeper and bwrap are reaped). */
        struct tb_error cg_err = { 0 };
        if (t->cgroup && cgroup_destroy(TAKE_PTR(t->cgroup), &cg_err) < 0)
                log_warn("%s", cg_err.msg);
        free(t->probe);
        host_sockets_early_free(t->sockets);
        outcome_file_done(&t->final);
        json_object_put(t->outcome.network);
        json_object_put(t->outcome.repo_guard);
        json_object_put(t->outcome.control_files);
        json_object_put(t->outcome.special_files);
        trial_net_done(&t->net);
        host_done(&t->host);
        repo_guard_done(&t->guard);
        sandbox_spec_done(&t->spec);
        plugin_unload(&t->plugin);
        free(t->repo);
        free(t->output);
        free(t->home);
        free(t->user_home);
        free(t->bin);
        free(t->bwrap);
        free(t->skills);
        session_user_done(&t->user);
        session_env_done(&t->session_env);
        if (t->home_fd >= 0)
                close(t->home_fd);
}

/* The nearest existing folder at or above `path`. */
static char *existing_ancestor(const char *path)
{
        char *p = xstrdup(path);
        struct stat st;
        while (lstat(p, &st) < 0 && strcmp(p, "/") != 0) {
                char *slash = strrchr(p, '/');
                if (slash == p)
                        slash[1] = '\0';
                else
                        *slash = '\0';
        }
        return p;
}

/* Who the session runs as (session_user.h), and that it can use what it
 * must: the repository read-write, the output folder's path. Unsandboxed,
 * the session is trialbox's own user, whoever that is. */
static int trial_pick_user(struct trial *t, struct tb_error *err)
{
        const struct trial_options *opt = t->opt;
        if (opt->no_sandbox) {
                t->user = (struct session_user){ .uid = geteuid(), .gid = getegid(), .why = "trialbox's own" };
                return 0;
        }
        struct stat st;
        if (stat(t->repo, &st) < 0)
                return tb_fail(err, -errno, "repository '%s': %s", t->repo, strerror(errno));
        int r = session_user_resolve(opt->user, opt->root_session, geteuid(), &st, &t->user, err);
        if (r < 0 || !t->user.drop)
                return r;
        /* The checks below switch trialbox's ids with glibc's set*id(),
         * which waits for every thread: a prestarted keeper's holder could
         * not answer. trial_prestart predicts no switch; should it not hold,
         * that keeper ends here, before any. */
        supervisor_prestart_cancel(TAKE_PTR(t->pre));
        if (!session_user_can(&t->user, t->repo, R_OK | W_OK | X_OK))
                return tb_fail(err, -EACCES,
                               "the session runs as '%s' (%s), who cannot write the repository '%s'; make it "
                               "theirs (chown -R %s '%s') or pass --user",
                               t->user.name, t->user.why, t->repo, t->user.name, t->repo);
        /* Above the output folder: that one run makes (or opens) 0711 itself. */
        _cleanup_free_ char *parent = path_dirname(t->output);
        _cleanup_free_ char *up = existing_ancestor(parent);
        if (!session_user_can(&t->user, up, X_OK))
                return tb_fail(err, -EACCES,
                               "the session runs as '%s' (%s), who cannot reach '%s' (its home's folder is bound "
                               "as that user); choose an output folder whose parents it can search",
                               t->user.name, t->user.why, up);
        return 0;
}

/* Check the request: 0, or a negative errno with `err` saying what is wrong
 * with it (a usage error: nothing was run or written). */
static int trial_validate(struct trial *t, struct tb_error *err)
{
        const struct trial_options *opt = t->opt;
        struct stat st;
        /* The repository and the output folder share their parents, most often. */
        _cleanup_(path_memo_done) struct path_memo memo = { 0 };

        if (!plugin_name_valid(opt->harness))
                return tb_fail(err, -EINVAL,
                               "'%s' is not a harness name (lowercase letters, digits, '-' and '_'); see "
                               "'trialbox harnesses'",
                               opt->harness);
        if (stat(opt->repo, &st) < 0)
                return tb_fail(err, -errno, "repository '%s': %s; pass the prepared repository's folder with --repo",
                               opt->repo, strerror(errno));
        if (!S_ISDIR(st.st_mode))
                return tb_fail(err, -ENOTDIR,
                               "repository '%s' is not a folder; pass the prepared repository's folder with --repo",
                               opt->repo);
        t->repo = path_memo_realpath(&memo, opt->repo);
        if (!t->repo)
                return tb_fail(err, -errno, "repository '%s': %s", opt->repo, strerror(errno));
        if (opt->skills) {
                if (stat(opt->skills, &st) < 0 || !S_ISDIR(st.st_mode))
                        return tb_fail(err, -ENOTDIR,
                                       "skills folder '%s' is not a folder; pass an existing folder with --skills",
                                       opt->skills);
                t->skills = realpath(opt->skills, NULL);
        }

        if (lstat(opt->output_dir, &st) == 0) {
                if (S_ISLNK(st.st_mode))
                        return tb_fail(err, -ELOOP, "output folder '%s' is a symbolic link; pass the real folder",
                                       opt->output_dir);
                if (!S_ISDIR(st.st_mode))
                        return tb_fail(err, -ENOTDIR, "output folder '%s' is not a folder; pass a new or empty folder",
                                       opt->output_dir);
        } else if (errno != ENOENT) {
                return tb_fail(err, -errno, "output folder '%s': %s", opt->output_dir, strerror(errno));
        }
        if (resolve_new_path(&memo, opt->output_dir, &t->output) < 0)
                return tb_fail(err, -EINVAL,
                               "output folder '%s' has '.' or '..' where it does not exist yet; pass a plain path",
                               opt->output_dir);
        if (path_is_under(t->output, t->repo))
                return tb_fail(err, -EINVAL,
                               "output folder '%s' is inside the repository '%s', where the session could read "
                               "its home; choose a folder outside it",
                               t->output, t->repo);
        _cleanup_free_ char *home = xasprintf("%s/home", t->output);
        _cleanup_free_ char *outcome = xasprintf("%s/outcome.json", t->output);
        if (lstat(home, &st) == 0 || lstat(outcome, &st) == 0)
                return tb_fail(err, -EEXIST, "output folder '%s' already holds a Trial; give each Trial a new folder",
                               t->output);
        if (opt->env_file) {
                int r = session_env_read(opt->env_file, &t->session_env, err);
                if (r < 0)
                        return r;
        }
        for (char *const *e = opt->session_env; e && *e; e++)
                strv_add(&t->session_env, *e);
        if (opt->no_sandbox && opt->network != TRIAL_NETWORK_HOST && opt->network != TRIAL_NETWORK_DEFAULT)
                return tb_fail(err, -EINVAL, "--network %s needs the sandbox; drop --no-sandbox (and TRIALBOX_NO_SANDBOX)",
                               trial_network_name(opt->network));
        /* The host's home as `check` sees it too (env.c); "/" when there is none. */
        t->user_home = xstrdup(t->env->home ? t->env->home : "/");
        t->home = opt->no_sandbox ? xstrdup(t->user_home) : TAKE_PTR(home);
        return trial_pick_user(t, err);
}

/* The output folder, when it is new: 0700, or 0711 when the session runs
 * as another user (bwrap, as that user, opens the home under it: it must
 * search it, but needs neither to list nor to write it). Its parents as
 * mkdir -p makes them. 0 or -errno. */
static int trial_make_output(struct trial *t)
{
        _cleanup_free_ char *parent = path_dirname(t->output);
        int r = mkdir_p(parent, 0755);
        if (r < 0)
                return r;
        mode_t mode = t->user.drop ? 0711 : 0700;
        if (mkdir(t->output, mode) == 0)
                return chmod(t->output, mode) < 0 ? -errno : 0; /* whatever the umask */
        if (errno != EEXIST)
                return -errno;
        /* Made before (a batch makes it 0700): the mode this Trial needs.
         * One that cannot be changed (a read-only filesystem) fails later,
         * where the Outcome is written. */
        struct stat st;
        if (stat(t->output, &st) == 0 && (st.st_mode & 07777) != mode && chmod(t->output, mode) < 0 && errno != EROFS)
                return -errno;
        return 0;
}

/* Does the Harness run its own sandbox (TB_HARNESS_NEEDS_USERNS)? */
static bool trial_needs_userns(const struct trial *t) { return plugin_needs_userns(&t->plugin); }

/* Load the plugin and make the output folder: 0, or a negative errno with
 * `err` filled (a usage error too: the request names what cannot be had). */
static int trial_load(struct trial *t, struct tb_error *err)
{
        int r = plugin_load(t->env->plugin_path, t->opt->harness, &t->plugin, err);
        if (r < 0)
                return r;
        /* bwrap, started early, reads the filter once its options come. */
        if (t->filter_pending) {
                r = confine_filter_fill(t->spec.seccomp_fd, trial_needs_userns(t), err);
                if (r < 0)
                        return r;
                t->filter_pending = false;
        }
        if (t->opt->dry_run)
                return 0;
        r = trial_make_output(t);
        if (r < 0)
                return tb_fail(err, r, "cannot create output folder '%s': %s; choose a writable folder", t->output,
                               strerror(-r));
        return 0;
}

/* Write the Outcome, print it and the summary line: 0, or a negative errno
 * with `err` filled when outcome.json cannot be written. */
static int trial_finish(struct trial *t, struct tb_error *err)
{
        t->outcome.duration_ms = now_ms() - t->start_ms;
        if (!t->outcome.network)
                t->outcome.network = trial_net_outcome_json(&t->net);
        outcome_end(&t->outcome);
        /* Into the space reserved before the session (a full disk cannot
         * stop it); a Trial void before the reservation is written plainly. */
        int r = t->final.fd >= 0 ? outcome_commit(&t->final, &t->outcome, err)
                                 : outcome_write(&t->outcome, t->output, err);
        TB_PHASE("final_record");
        if (r < 0)
                return r;
        if (t->opt->json) {
                /* After the record, and never waiting long on a reader of
                 * stdout that stopped (sink.h): trialbox still ends. */
                _cleanup_free_ char *json = outcome_to_json(&t->outcome);
                _cleanup_free_ char *line = xasprintf("%s\n", json);
                struct sink out;
                fflush(stdout);
                sink_init(&out, STDOUT_FILENO, SINK_DEFAULT_MAX);
                sink_write(&out, line, strlen(line));
                sink_drain(&out, 1000);
                sink_done(&out);
        }
        const struct outcome *o = &t->outcome;
        if (o->kind == OUTCOME_VOID)
                log_error("%s: void (%s): %s", o->harness, outcome_cause_name(o->cause), o->detail);
        else
                log_notice("%s: %s: %s, in %lld ms; see %s/outcome.json", o->harness, outcome_kind_name(o->kind),
                           o->detail, o->duration_ms, t->output);
        return 0;
}

static struct toolchain_host trial_toolchain_host(const struct trial *t)
{
        return (struct toolchain_host){
                .path = t->env->path,
                .home = t->user_home,
                .tools = t->env->toolchains,
                .cargo_home = t->env->cargo_home,
                .rustup_home = t->env->rustup_home,
                .pyenv_root = t->env->pyenv_root,
                .config_home = t->env->xdg_config_home,
                .data_home = t->env->xdg_data_home,
                .state_home = t->env->xdg_state_home,
                .secret_places = t->env->secret_places,
        };
}

static struct repo_guard_host trial_guard_host(const struct trial *t)
{
        return (struct repo_guard_host){
                .repo = t->repo, .host_home = t->user_home, .session_home = t->home, .path = t->env->path,
                .keep_control_files = t->opt->keep_control_files,
        };
}

/* The repository read-write at its own path, and its guard, opened (its
 * snapshot is taken while bwrap sets the sandbox up: trial_start). */
static int trial_add_repo(struct trial *t, struct tb_error *err)
{
        struct sandbox_spec *spec = &t->spec;
        sandbox_add(spec, SANDBOX_BIND, t->repo, t->repo);
        /* After the system binds, which it is checked not to override. */
        const struct repo_guard_host gh = trial_guard_host(t);
        int r = repo_guard_open(&t->guard, &gh, spec, err);
        TB_PHASE("guard_open");
        if (r < 0)
                return r;
        if (t->guard.refused)
                log_warn("the worktree's git directory is not bound: %s", t->guard.refused);
        repo_guard_add_binds(&t->guard, spec);
        return 0;
}

/* A grader's: the graded repository through its layer, no guard (trial/grader.h). */
static int trial_add_graded_repo(struct trial *t, struct tb_error *err)
{
        const struct grader_host h = {
                .repo = t->repo,
                .output = t->output,
                .bwrap = t->bwrap,
                .size = t->opt->limits.memory_bytes,
                .user = &t->user,
                .dry_run = t->opt->dry_run,
        };
        int r = grader_spec(t->opt->grader, &h, &t->spec, err);
        if (r < 0)
                t->cause = CAUSE_SANDBOX_UNAVAILABLE;
        return r;
}

static int trial_build_spec(struct trial *t, struct tb_error *err)
{
        struct sandbox_spec *spec = &t->spec;
        const bool sandboxed = !t->opt->no_sandbox;

        trial_add_allowed_env(spec, t->env, sandboxed);
        if (!sandboxed) {
                strv_add(&spec->command, t->bin);
                spec->chdir = xstrdup(t->repo);
                return 0;
        }
        struct toolchain_host th = trial_toolchain_host(t);
        /* One pass over the host's toolchains: each path resolved once. */
        struct path_memo memo = { 0 };
        th.memo = &memo;
        set_home_env(spec, t->home);
        toolchain_add_system(spec, TOOLCHAIN_RESOLV_CONF);
        TB_PHASE("tc_system");
        toolchain_add_tools(spec, &th);
        TB_PHASE("tc_tools");
        _cleanup_free_ char *run_path = toolchain_add_harness(spec, t->opt->harness, t->bin, &th);
        path_memo_done(&memo);
        if (t->skills) {
                sandbox_add(spec, SANDBOX_RO_BIND, t->skills, t->skills);
                _cleanup_free_ char *given = make_absolute(t->opt->skills);
                if (strcmp(given, t->skills) != 0)
                        sandbox_add(spec, SANDBOX_RO_BIND, t->skills, given);
        }
        int r = t->opt->grader ? trial_add_graded_repo(t, err) : trial_add_repo(t, err);
        if (r < 0)
                return r;
        sandbox_add(spec, SANDBOX_BIND, t->home, t->home);
        strv_add(&spec->command, run_path);
        spec->chdir = xstrdup(t->repo);
        return 0;
}

/* Fill in the Outcome and the host context, find the binaries: 0, or a
 * negative errno with `err` and t->cause saying why the Trial is void. */
static int trial_setup(struct trial *t, struct tb_error *err)
{
        const struct trial_options *opt = t->opt;

        t->outcome = (struct outcome){
                .harness = opt->harness,
                .exit_code = -1,
                .sandboxed = !opt->no_sandbox,
                .home = t->home,
                .limits = &opt->limits,
        };
        outcome_start(&t->outcome);
        /* The Slurm job this Trial runs in, if any. */
        struct slurm_ids ids = slurm_ids_from_env(t->env->environ);
        t->outcome.slurm_job_id = ids.job_id;
        outcome_set_nonce(&t->outcome, t->env->record_nonce);
        t->outcome.slurm_array_task_id = ids.array_task_id;
        t->host = (struct tb_host){
                .harness = opt->harness,
                .env = t->env,
                .spec = &t->spec,
                .sandboxed = !opt->no_sandbox,
                .host_home = t->user_home,
                .session_home = t->home,
                .dry_run = opt->dry_run,
                .credentials_path = opt->credentials,
                .session_user = &t->user,
                .home_fd = &t->home_fd,
        };

        const char *want = opt->harness_bin ? opt->harness_bin : t->plugin.harness->default_binary;
        t->bin = find_on_path(want, t->env->path);
        if (!t->bin) {
                t->cause = CAUSE_SESSION_UNAVAILABLE;
                return tb_fail(err, -ENOENT, "the %s binary '%s' was not found%s; install it or pass --harness-bin",
                               opt->harness, want, strchr(want, '/') ? "" : " on the PATH");
        }
        if (opt->no_sandbox)
                return 0;
        if (t->user.drop && !session_user_can(&t->user, t->bin, X_OK)) {
                t->cause = CAUSE_SESSION_UNAVAILABLE;
                return tb_fail(err, -EACCES,
                               "the session's user '%s' cannot run the %s binary '%s'; install it where that user "
                               "can reach it, or pass --harness-bin",
                               t->user.name, opt->harness, t->bin);
        }
        if (!t->bwrap)
                t->bwrap = find_bwrap(t->env);
        if (!t->bwrap) {
                t->cause = CAUSE_SANDBOX_UNAVAILABLE;
                return tb_fail(err, -ENOENT, "%s",
                               t->env->bwrap ? "TRIALBOX_BWRAP does not name an executable bwrap; fix it or unset it"
                                             : "bwrap was not found on the PATH; install bubblewrap (apt-get "
                                               "install bubblewrap)");
        }
        return 0;
}

/* Whether the limits asked can be enforced here: else the Trial is void
 * with the probe's reason and fix (never run unenforced). Asked once, by
 * trial_start_early, for every Trial. 0, or a negative errno with `err`
 * and t->cause. */
static int trial_limits_probe(struct trial *t, struct tb_error *err)
{
        const struct trial_limits *l = &t->opt->limits;
        if (!trial_limits_need_cgroup(l))
                return 0;
        t->probe = xcalloc(1, sizeof *t->probe);
        if (cgroup_probe(l, t->probe) != CGROUP_NONE)
                return 0;
        t->cause = CAUSE_SANDBOX_UNAVAILABLE;
        return tb_fail(err, -EOPNOTSUPP, "the limits asked cannot be enforced here: %s", t->probe->reason);
}

/* Before the session: the Trial's cgroup, which the keeper joins when it
 * is forked (made already when bwrap was started early: trial_start_early).
 * After trial_limits_probe, which every Trial passes first (t->probe is set
 * whenever a cgroup is needed). 0, or a negative errno with `err` and
 * t->cause. */
static int trial_limits_start(struct trial *t, struct tb_error *err)
{
        if (!trial_limits_need_cgroup(&t->opt->limits) || t->cgroup)
                return 0;
        char name[64];
        snprintf(name, sizeof name, "%d-%lld", (int)getpid(), outcome_realtime_ms());
        int r = cgroup_create(t->probe, &t->opt->limits, name, &t->cgroup, err);
        if (r < 0)
                t->cause = CAUSE_SANDBOX_UNAVAILABLE;
        return r;
}

/* Whether the Trial's bwrap may be started before its options are known
 * (trial_start_early says when not). */
static bool trial_may_start_early(const struct trial *t)
{
        const struct trial_options *opt = t->opt;
        return !(opt->no_sandbox || opt->dry_run || opt->grader || t->user.drop || !shared_child_shares_memory());
}

/* The keeper of bwrap's early start (trial_start_early) started before the
 * checks, while they are made (supervisor_prestart), when the Trial's
 * options already say bwrap will be started early: the session runs as
 * trialbox's own user (trialbox is not root, or has --root-session and no
 * --user), so the checks never switch trialbox's ids (glibc's set*id()
 * waits for every thread, and the keeper's holder cannot answer while the
 * keeper lives; trial_pick_user ends the keeper first, should the
 * prediction ever not hold). Taken by the early start, or ended when there
 * is none. */
static void trial_prestart(struct trial *t)
{
        const struct trial_options *opt = t->opt;
        if (trial_may_start_early(t) && (geteuid() != 0 || (opt->root_session && !opt->user)))
                t->pre = supervisor_prestart();
}

/* bwrap started now, once the request is checked and before the plugin is
 * loaded and the spec built, so that the keeper's start, bwrap's exec and
 * its loader overlap that work (supervisor_start_early): its line needs
 * only the filter's fd (reserved here, its program written once the plugin
 * is loaded: trial_load; bwrap reads it after its options), and the
 * session's command (the Harness's place in the sandbox, named by the
 * Harness, and the session's arguments: no plugin adds to it). First, for
 * every Trial, whether its limits can be enforced here (a dry run's, one
 * started late, too: one answer at one point, before the logins and the
 * hooks, whichever way bwrap starts); with limits that need a cgroup, the
 * cgroup is made before bwrap starts (the keeper joins it first, as when
 * bwrap starts late). Not for a dry run,
 * unsandboxed, for a grader (its layer is mounted before bwrap starts), for
 * a session of another user (the checks of what that user can reach switch
 * trialbox's ids with glibc's set*id(), which waits for every thread, and
 * the keeper's holder cannot answer while the keeper lives), or under
 * valgrind (the keeper is a fork there: it could not tell trialbox bwrap's
 * pid). Nor when bwrap is not found: trial_setup says so. 0, or a negative
 * errno with `err` and t->cause. */
static int trial_start_early(struct trial *t, struct tb_error *err)
{
        const struct trial_options *opt = t->opt;
        /* Every Trial, started early or not (a dry run too), asks here
         * whether its limits can be enforced: one answer, at one point. */
        int r = trial_limits_probe(t, err);
        if (r < 0 || !trial_may_start_early(t)) {
                supervisor_prestart_cancel(TAKE_PTR(t->pre));
                return r;
        }
        t->bwrap = find_bwrap(t->env);
        if (!t->bwrap) {
                supervisor_prestart_cancel(TAKE_PTR(t->pre));
                return 0;
        }
        /* The cgroup the keeper joins first, as it does when started late. */
        r = trial_limits_start(t, err);
        if (r < 0) {
                supervisor_prestart_cancel(TAKE_PTR(t->pre));
                return r;
        }
        r = confine_filter_reserve(&t->spec.seccomp_fd, err);
        if (r >= 0) {
                t->filter_pending = true;
                _cleanup_strv_ struct strv command = { 0 };
                strv_add_take(&command, sandbox_harness_path(opt->harness));
                for (char **a = opt->session_args; a && *a; a++)
                        strv_add(&command, *a);
                const struct supervisor_early e = { .bwrap = t->bwrap,
                                                    .seccomp_fd = t->spec.seccomp_fd,
                                                    .command = command.v,
                                                    .user = &t->user,
                                                    .cgroup = t->cgroup };
                t->started = supervisor_start_early(&e, TAKE_PTR(t->pre), err);
                if (!t->started)
                        r = -errno;
        }
        if (r < 0)
                t->cause = CAUSE_SANDBOX_UNAVAILABLE;
        return r;
}

/* The seccomp filter, nested user namespaces, TMPDIR (confine.h); last,
 * once every bind is in place. 0, or a negative errno with `err`. */
static int trial_confine(struct trial *t, struct tb_error *err)
{
        if (t->opt->no_sandbox)
                return 0;
        const struct confine_options co = {
                .nested_userns = trial_needs_userns(t),
                /* bwrap (not setuid) makes a user namespace unless run by
                 * root; the keeper starts it as the session's user. */
                .bwrap_userns = geteuid() != 0 || t->user.drop,
        };
        int r = confine_spec(&t->spec, &co, t->home, err);
        if (r < 0)
                t->cause = CAUSE_SANDBOX_UNAVAILABLE;
        return r;
}

/* The Trial's network: the mode (without --network, trial_network_default
 * of the endpoints the Harness declares) and, for allow, its allowlist:
 * the Harness's required endpoints (its `endpoints` hook; optional ones
 * only through --allow-host) and every --allow-host; then the spec's part.
 * 0, or a negative errno with `err`. */
static int trial_network_policy(struct trial *t, struct tb_error *err)
{
        struct trial_net *net = &t->net;
        if (net->mode == TRIAL_NETWORK_HOST || net->mode == TRIAL_NETWORK_NONE || t->opt->no_sandbox)
                goto spec;
        int r = host_call(&t->host, t->plugin.endpoints);
        if (r < 0)
                return tb_fail(err, r, "the %s plugin's endpoints hook failed: %s", t->opt->harness, strerror(-r));
        size_t n;
        const struct host_endpoint *e = host_endpoints(&t->host, &n);
        if (net->mode == TRIAL_NETWORK_DEFAULT)
                net->mode = trial_network_default(n);
        if (net->mode != TRIAL_NETWORK_ALLOW)
                goto spec;
        net->policy = netpolicy_new();
        for (size_t i = 0; i < n && !t->opt->no_harness_endpoints; i++)
                if (e[i].required && (r = netpolicy_add(net->policy, e[i].pattern, err)) < 0)
                        return r;
        for (size_t i = 0; i < t->opt->n_allow_hosts; i++)
                if ((r = netpolicy_add(net->policy, t->opt->allow_hosts[i], err)) < 0)
                        return r;
spec:
        if (!t->opt->no_sandbox)
                trial_net_spec(net, &t->spec);
        return 0;
}

/* When the session runs as another user: the fresh home and everything
 * trialbox put in it (logins' copies, configs, the git identity) become
 * that user's, through the fd opened when the home was made, and the
 * session's USER and LOGNAME name it. 0, or a negative errno with `err`. */
static int trial_hand_over_home(struct trial *t, struct tb_error *err)
{
        if (!t->user.drop || t->opt->no_sandbox)
                return 0;
        sandbox_setenv(&t->spec, "USER", t->user.name, false);
        sandbox_setenv(&t->spec, "LOGNAME", t->user.name, false);
        if (t->opt->dry_run || t->home_fd < 0)
                return 0;
        int r = session_user_chown_tree(t->home_fd, &t->user);
        if (r < 0) {
                t->cause = CAUSE_SESSION_UNAVAILABLE;
                return tb_fail(err, r, "cannot give the fresh home '%s' to '%s': %s", t->home, t->user.name,
                               strerror(-r));
        }
        return 0;
}

/* The user's own variables (--env-file), after the plugin's: the user's
 * word wins over the plugin's defaults; trialbox's own names were refused
 * when the file was read. Secrets: --dry-run redacts them. */
static void trial_apply_session_env(struct trial *t)
{
        for (size_t i = 0; i < t->session_env.n; i++) {
                const char *kv = t->session_env.v[i], *eq = strchr(kv, '=');
                _cleanup_free_ char *name = strndup(kv, (size_t)(eq - kv));
                sandbox_setenv(&t->spec, name, eq + 1, true);
        }
}

/* The host user's git identity into the fresh home (gitguard/identity.h),
 * for a sandboxed session that runs. 0, or a negative errno with `err`
 * and t->cause. */
static int trial_write_identity(struct trial *t, struct tb_error *err)
{
        if (t->opt->no_sandbox || t->opt->dry_run)
                return 0;
        int r = git_identity_write(t->env->path, t->user_home, t->home, err);
        TB_PHASE("identity");
        if (r < 0)
                t->cause = CAUSE_SESSION_UNAVAILABLE;
        return r;
}

/* Build the spec through the plugin's hooks: 0, or a negative errno with
 * `err` and t->cause saying why the Trial is void. */
static int trial_prepare(struct trial *t, struct tb_error *err)
{
        /* The fresh home first: logins and configs are put into it. */
        if (!t->opt->no_sandbox && !t->opt->dry_run) {
                int r = make_fresh_home(t->home);
                if (r == 0) {
                        t->home_fd = open(t->home, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (t->home_fd < 0)
                                r = -errno;
                }
                if (r < 0) {
                        t->cause = CAUSE_SESSION_UNAVAILABLE;
                        return tb_fail(err, r, "cannot create the fresh home '%s': %s", t->home, strerror(-r));
                }
        }
        int r = trial_build_spec(t, err);
        TB_PHASE("spec");
        if (r < 0) {
                if (t->cause == CAUSE_NONE) /* a grader's layer says its own */
                        t->cause = CAUSE_SESSION_UNAVAILABLE;
                return r;
        }
        r = host_call(&t->host, t->plugin.preflight);
        if (r >= 0)
                r = host_call(&t->host, t->plugin.prepare_login);
        if (r >= 0)
                r = host_call(&t->host, t->plugin.env);
        TB_PHASE("hooks");
        if (r >= 0)
                trial_apply_session_env(t);
        if (r < 0) {
                t->cause = CAUSE_SESSION_UNAVAILABLE;
                if (t->host.voided)
                        return tb_fail(err, r, "%s", t->host.void_detail);
                if (t->host.fail_detail[0])
                        return tb_fail(err, r, "the %s login could not be handed over: %s", t->opt->harness,
                                       t->host.fail_detail);
                return tb_fail(err, r, "the %s plugin failed: %s", t->opt->harness, strerror(-r));
        }
        r = trial_network_policy(t, err);
        if (r < 0) {
                t->cause = CAUSE_SESSION_UNAVAILABLE;
                return r;
        }
        /* Last: a void Trial leaves nothing in the fresh home. A session of
         * trialbox's own user gets it while bwrap starts (trial_start: off
         * the way to bwrap's options); one of another user's, now, before
         * the home is handed over to that user. */
        if (t->user.drop && (r = trial_write_identity(t, err)) < 0)
                return r;
        for (char **a = t->opt->session_args; a && *a; a++)
                strv_add(&t->spec.command, *a);
        r = trial_hand_over_home(t, err);
        if (r < 0)
                return r;
        return trial_confine(t, err);
}

/* The login watch's handlers: a login not written back is worth a warning
 * as it happens, not the end of the session. */
static void logins_ready(void *set)
{
        struct tb_error err = { 0 };
        if (login_sync_ready(set, &err) < 0)
                log_warn("%s", err.msg);
}

static void logins_finish(void *set)
{
        struct tb_error err = { 0 };
        if (login_sync_finish(set, &err) < 0)
                log_warn("%s", err.msg);
}

/* The limits' part of the spec (whether they can be enforced here was
 * asked before: trial_limits_probe): /tmp's size, the deadline the session
 * sees. */
static void trial_limits_prepare(struct trial *t)
{
        const struct trial_limits *l = &t->opt->limits;
        if (!t->opt->no_sandbox)
                t->spec.tmpfs_size = trial_limits_tmpfs_size(l);
        long long deadline = trial_limits_deadline(l, outcome_realtime_ms());
        if (deadline != LIMIT_UNSET) {
                char buf[32];
                snprintf(buf, sizeof buf, "%lld", deadline);
                sandbox_setenv(&t->spec, "TRIALBOX_DEADLINE", buf, false);
        }
}

/* The supervisor's before_start: with bwrap started early, as root, first
 * the other network namespaces' sockets masked (their list, a walk of
 * /proc, was left out of bwrap's options: trial_finish_spec); when that
 * adds a mask, nothing else, and -EAGAIN with t->restart: bwrap is ended
 * before its session's byte and started again with it (trial_session).
 * Then the host user's git identity in the
 * fresh home (a session of trialbox's own user: trial_prepare), the
 * repository guard's snapshot, then the final record's space and the
 * `running` record, written durably.
 * Called while bwrap sets the sandbox up, whose session waits for it
 * (supervisor.h): the session's program never runs before the snapshot is
 * whole and its record is on disk, and neither costs bwrap's start-up
 * anything (on another CPU, they overlap). 0, or a negative errno with
 * `err`; t->start_failed says the Trial is void/session_unavailable, as
 * before it started anything. */
static int trial_start(void *ctx, struct tb_error *err)
{
        struct trial *t = ctx;
        if (t->sockets_others_pending) {
                t->sockets_others_pending = false;
                struct host_sockets_report hs;
                host_sockets_mask(&t->spec, NULL, HOST_SOCKETS_OTHERS, &hs);
                TB_PHASE("masked_others");
                log_info("host unix sockets of the other network namespaces: %zu listed, %zu masked%s", hs.listed,
                         hs.masked, hs.masked ? " (bwrap is started again with them)" : "");
                if (hs.masked > 0) {
                        t->restart = true;
                        return tb_fail(err, -EAGAIN, "bwrap's options had not every mask");
                }
        }
        int r = t->user.drop ? 0 : trial_write_identity(t, err);
        if (r >= 0 && t->guard.repo) {
                const struct repo_guard_host gh = trial_guard_host(t);
                r = repo_guard_snapshot(&t->guard, &gh, err);
                TB_PHASE("guard_snapshot");
        }
        char boot_id[40];
        if (r >= 0)
                r = outcome_reserve(&t->final, t->output, err);
        if (r >= 0)
                r = outcome_boot_id(boot_id, sizeof boot_id, err);
        if (r >= 0)
                r = outcome_write_running(&t->outcome, t->output, getpid(), boot_id, err);
        TB_PHASE("records");
        t->start_failed = r < 0;
        return r;
}

/* After the session: what it used (the cgroup's figures where there is
 * one, the rest from the kernel's rusage), then the cgroup removed. */
static void trial_limits_end(struct trial *t, const struct rusage *ru, struct session_result *res)
{
        struct trial_usage *u = &t->outcome.usage;
        trial_usage_init(u);
        if (t->cgroup)
                cgroup_usage(t->cgroup, u);
        trial_usage_fill_from_rusage(u, ru);
        /* null when no session ran (a void Trial). */
        t->outcome.usage_known = res->started;
        if (u->oom_kills > res->oom_kills)
                res->oom_kills = u->oom_kills;
        struct tb_error err = { 0 };
        if (cgroup_destroy(TAKE_PTR(t->cgroup), &err) < 0)
                log_warn("%s", err.msg);
}

/* A session that runs as another user sees of the host what that user
 * could: a read-only bind (a toolchain, a tool) whose source it cannot
 * reach, such as one under root's 0700 home, is left out, with a warning.
 * A read-write bind it cannot write (a Harness's Trials home owned by
 * root) makes the Trial void, with the reason: 0, or a negative errno with
 * `err` and t->cause. */
static int trial_drop_unreachable(struct trial *t, struct tb_error *err)
{
        struct sandbox_spec *spec = &t->spec;
        if (!t->user.drop || spec->n_ops == 0)
                return 0;
        _cleanup_free_ char **src = xmalloc(spec->n_ops * sizeof *src);
        _cleanup_free_ bool *ok = xmalloc(spec->n_ops * sizeof *ok);
        _cleanup_free_ bool *rw = xmalloc(spec->n_ops * sizeof *rw);
        for (size_t i = 0; i < spec->n_ops; i++)
                src[i] = spec->ops[i].kind == SANDBOX_RO_BIND || spec->ops[i].kind == SANDBOX_BIND ? spec->ops[i].src
                                                                                                   : "/";
        session_user_can_all(&t->user, src, spec->n_ops, F_OK, ok);
        session_user_can_all(&t->user, src, spec->n_ops, W_OK, rw);
        for (size_t i = 0; i < spec->n_ops; i++) {
                if (spec->ops[i].kind != SANDBOX_BIND)
                        continue;
                ok[i] = true; /* never left out; in a dry run, the home is not made */
                if (!rw[i] && !t->opt->dry_run) {
                        t->cause = CAUSE_SESSION_UNAVAILABLE;
                        return tb_fail(err, -EACCES,
                                       "the session's user '%s' cannot write '%s', which the session gets "
                                       "read-write; make it theirs or pass --user with its owner",
                                       t->user.name, spec->ops[i].src);
                }
        }
        size_t kept = 0;
        for (size_t i = 0; i < spec->n_ops; i++) {
                struct sandbox_op *op = &spec->ops[i];
                if (ok[i]) {
                        spec->ops[kept++] = *op;
                        continue;
                }
                log_warn("'%s' is not bound: the session's user '%s' cannot reach it", op->src, t->user.name);
                free(op->src);
                free(op->dest);
        }
        spec->n_ops = kept;
        return 0;
}

/* Nothing in the record says completed or failed without saying what the
 * guard could not do. */
static void trial_guard_detail(struct trial *t)
{
        const struct repo_guard *g = &t->guard;
        if (g->status != GUARD_QUARANTINED && g->status != GUARD_FAILED)
                return;
        size_t k = strlen(t->outcome.detail);
        snprintf(t->outcome.detail + k, sizeof t->outcome.detail - k, "%s%s", k ? "; " : "",
                 g->status == GUARD_QUARANTINED ? "the repository's .git was quarantined (see repo_guard)"
                                                : "the repository guard failed: the repository may hold what the "
                                                  "session wrote (see repo_guard)");
}

/* After the session: the repository comes back as data, setuid bits go
 * from the output folder (the home, the quarantine), and the record says
 * what was done. */
static void trial_guard_restore(struct trial *t)
{
        if (!t->guard.repo || !t->guard.snapped) /* not guarded: unsandboxed, void before its snapshot */
                return;
        uid_t uid = t->user.drop ? t->user.uid : geteuid();
        _cleanup_close_ int out_fd = open(t->output, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        repo_guard_restore(&t->guard, out_fd, uid);
        if (out_fd >= 0 && repo_guard_clear_setuid(&t->guard, out_fd, "OUTPUT_DIR/", uid) < 0)
                t->guard.status = GUARD_FAILED;
        struct repo_guard *g = &t->guard;
        t->outcome.guard_status = repo_guard_status_name(g->status);
        t->outcome.repo_guard = repo_guard_json(g);
        t->outcome.control_files = repo_guard_control_json(g);
        t->outcome.special_files = repo_guard_special_json(g);
        if (out_fd >= 0 && repo_guard_write_log(g, out_fd, "guard.jsonl") < 0)
                log_warn("cannot write '%s/guard.jsonl': %s", t->output, strerror(errno));
        if (g->status == GUARD_QUARANTINED)
                log_error("the repository's .git was moved to '%s/quarantine' (%s); the repository has none now",
                          t->output, g->detail);
        else if (g->status == GUARD_FAILED)
                log_error("the repository guard could not finish (%s): do not run git in '%s' before looking at "
                          "'%s/guard.jsonl'",
                          g->detail, t->repo, t->output);
        else if (g->total_moved || g->total_changes)
                log_notice("the repository guard moved %zu entries out of '%s' and listed %zu control file changes "
                           "(see '%s/guard.jsonl')",
                           g->total_moved, t->repo, g->total_changes, t->output);
}

/* The spec's last steps, over every bind the core and the plugin made:
 * secrets masked, the host's unix sockets masked (without the host's
 * network), unreachable binds dropped, limits prepared. */
static int trial_finish_spec(struct trial *t, struct tb_error *err)
{
        if (!t->opt->no_sandbox) {
                struct toolchain_host th = trial_toolchain_host(t);
                /* A pass of its own: the plugin's hooks ran since the last. */
                struct path_memo memo = { 0 };
                th.memo = &memo;
                toolchain_mask_secrets(&t->spec, &th);
                path_memo_done(&memo);
        }
        TB_PHASE("masked_secrets");
        /* Without the host's network, none of its unix sockets either. The
         * listing thread is joined in trial_done(). With bwrap started
         * early, as root, this namespace's only: the other namespaces'
         * (a walk of /proc, the longest step before bwrap's options) are
         * masked while bwrap sets the sandbox up (trial_start), and in the
         * rare Trial where they add a mask, bwrap starts again with it. */
        if (!t->opt->no_sandbox && t->net.mode != TRIAL_NETWORK_HOST) {
                struct host_sockets_report hs;
                t->sockets_others_pending = t->started && host_sockets_lists_others();
                host_sockets_mask(&t->spec, t->sockets,
                                  t->sockets_others_pending ? HOST_SOCKETS_HERE : HOST_SOCKETS_ALL, &hs);
                TB_PHASE("masked_sockets");
                log_info("host unix sockets: %zu listed%s, %zu masked%s", hs.listed,
                         t->sockets_others_pending ? " (this network namespace's: the others' as bwrap starts)"
                         : !hs.in_line             ? ""
                         : t->sockets              ? " (in line: the thread had not begun)"
                                                   : " (in line)",
                         hs.masked, hs.walked ? " (the bound folders were walked)" : "");
        }
        int r = trial_drop_unreachable(t, err);
        if (r >= 0)
                trial_limits_prepare(t);
        return r;
}

/* What the supervisor runs: bwrap's command line, or the command itself. */
static void trial_command(const struct trial *t, struct strv *argv, struct strv *envp)
{
        if (t->bwrap)
                sandbox_argv(&t->spec, t->bwrap, argv);
        else
                for (size_t i = 0; i < t->spec.command.n; i++)
                        strv_add(argv, t->spec.command.v[i]);
        sandbox_envp(&t->spec, envp);
}

/* Run the session under the supervisor, its logins watched and its usage
 * counted; with the network allowed, held until the proxy is ready. When
 * the other network namespaces' sockets, masked while bwrap started early
 * sets the sandbox up (trial_start), need a mask its options did not
 * have, that bwrap is ended before the session's byte (nothing ran) and
 * the session runs under a bwrap started now, its line (argv, envp: made
 * again) with every mask. */
static int trial_session(struct trial *t, struct strv *argv, struct strv *envp, struct session_result *res,
                         struct tb_error *err)
{
        const struct trial_options *opt = t->opt;
        struct supervisor_watch logins = {
                .fd = t->host.logins.inotify_fd,
                .ready = logins_ready,
                .finish = logins_finish,
                .ctx = &t->host.logins,
        };
        struct supervisor_run run = {
                .argv = argv->v,
                .envp = envp->v,
                .cwd = t->spec.chdir,
                .bwrap = t->bwrap != NULL,
                .watches = t->host.logins.watching ? &logins : NULL,
                .n_watches = t->host.logins.watching ? 1 : 0,
                .cgroup = t->cgroup,
                .timeout_ms = opt->limits.timeout_ms,
                .kill_after_ms = opt->limits.kill_after_ms,
                .memory_bytes = opt->limits.memory_bytes,
                .user = &t->user,
                .cow = t->spec.cow.path ? &t->spec.cow : NULL,
        };
        struct rusage ru = { 0 };
        run.rusage = &ru;
        run.hold_signals = true; /* to trialbox's exit: see trial_run() in trial.h */
        run.before_start = trial_start;
        run.before_start_ctx = t;
        run.started = TAKE_PTR(t->started);
        if (t->net.mode == TRIAL_NETWORK_ALLOW) {
                run.hold = trial_net_hold;
                run.hold_ctx = &t->net;
        }
        int r = supervisor_run(&run, res, err);
        if (r < 0 && t->restart) {
                t->restart = false;
                strv_done(argv);
                strv_done_erase(envp);
                trial_command(t, argv, envp);
                run.argv = argv->v;
                run.envp = envp->v;
                run.started = NULL;
                /* The filter's memfd: its offset, shared with the first
                 * bwrap's copy, where that one's read left it. */
                if (lseek(t->spec.seccomp_fd, 0, SEEK_SET) < 0)
                        r = tb_fail(err, -errno, "rewinding the seccomp filter: %s", strerror(errno));
                else
                        r = supervisor_run(&run, res, err);
        }
        if (r < 0)
                res->started = false;
        trial_limits_end(t, &ru, res);
        return r;
}

/* Whatever the session's end: the repository guard's restores, before
 * anything else runs git there; a shared login the session removed or
 * broke, before the Trials home's lock is let go; and the fresh home's
 * mode, by the fd opened before it ran. */
static void trial_after_session(struct trial *t)
{
        trial_guard_restore(t);
        if (t->opt->grader)
                grader_after(t->opt->grader, t->output, t->user.drop ? t->user.uid : geteuid());
        host_after_session(&t->host);
        if (t->home_fd >= 0 && fchmod(t->home_fd, 0700) < 0)
                log_warn("cannot reset the mode of the fresh home '%s': %s", t->home, strerror(errno));
}

/* Run the session (or, with --dry-run, print its command line): 0, or a
 * negative errno with `err` and t->cause saying why the Trial is void. */
static int trial_execute(struct trial *t, struct tb_error *err)
{
        int r = trial_finish_spec(t, err);
        TB_PHASE("finish_spec");
        if (r < 0)
                return r;
        if (t->opt->dry_run || log_get_verbosity() >= 2) { /* the line printed, or said with -v */
                _cleanup_free_ char *line = sandbox_render(&t->spec, t->bwrap);
                if (t->opt->dry_run) {
                        printf("%s\n", line);
                        return 0;
                }
                log_info("plugin '%s'", t->plugin.path);
                log_info("running: %s", line);
        }
        r = trial_limits_start(t, err);
        TB_PHASE("cgroup");
        if (r < 0) {
                struct tb_error ignored = { 0 };
                cgroup_destroy(TAKE_PTR(t->cgroup), &ignored);
                return r;
        }
        _cleanup_strv_ struct strv argv = { 0 };
        _cleanup_strv_erase_ struct strv envp = { 0 }; /* holds the secrets */
        trial_command(t, &argv, &envp);
        if (t->net.mode == TRIAL_NETWORK_ALLOW && (r = trial_net_open_record(&t->net, t->output, err)) < 0) {
                t->cause = CAUSE_SANDBOX_UNAVAILABLE;
                return r;
        }
        struct session_result res;
        r = trial_session(t, &argv, &envp, &res, err);
        TB_PHASE("session");
        trial_after_session(t);
        TB_PHASE("after_session");
        /* What the session cost, from the Harness's own files: once the
         * guard and the logins are done, whatever the session's end. */
        if (r >= 0 && res.started)
                host_read_tokens(&t->host, t->plugin.tokens, &t->outcome.tokens);
        if (r < 0) {
                t->cause = t->start_failed ? CAUSE_SESSION_UNAVAILABLE : CAUSE_SANDBOX_UNAVAILABLE;
                return r;
        }
        outcome_from_session(&t->outcome, &res);
        trial_guard_detail(t);
        return 0;
}

/* The operator's signals (SIGINT, SIGTERM, SIGHUP) are blocked from the
 * start: one that comes while the Trial is set up is not lost (trialbox
 * does not die of it, nor does a session start after it): the supervisor
 * takes it before it starts anything, and the Trial is void/interrupted. */
static void trial_hold_operator_signals(void)
{
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGHUP);
        sigprocmask(SIG_BLOCK, &set, NULL);
}

/* A step before the session failed while the operator's signal was
 * pending (it may have been the cause: a helper it killed): the Trial is
 * void/interrupted, the step's error in its detail. */
static bool trial_interrupted_before_start(struct trial *t, const char *why)
{
        sigset_t pending;
        int sig = 0;
        if (sigpending(&pending) == 0)
                sig = sigismember(&pending, SIGINT) ? SIGINT : sigismember(&pending, SIGTERM) ? SIGTERM
                      : sigismember(&pending, SIGHUP)                                        ? SIGHUP
                                                                                             : 0;
        if (!sig)
                return false;
        struct session_result res = { .interrupted = sig, .void_cause = CAUSE_INTERRUPTED };
        snprintf(res.detail, sizeof res.detail, "%.500s", why);
        outcome_from_session(&t->outcome, &res);
        return true;
}

/* The command layer of `run`: each step returns 0 or a negative errno with
 * `err`; here alone that becomes an exit status. */
int trial_run(const struct trial_options *opt, const struct tb_env *env)
{
        struct trial t = { .opt = opt, .env = env, .start_ms = now_ms(), .final = OUTCOME_FILE_INIT,
                           .net = TRIAL_NET_INIT, .home_fd = -1 };
        /* Unsandboxed, the session has the host's network whatever the default. */
        t.net.mode = opt->no_sandbox && opt->network == TRIAL_NETWORK_DEFAULT ? TRIAL_NETWORK_HOST : opt->network;
        t.net.test_hosts = env->test_hosts;
        t.net.no_harness_endpoints = opt->no_harness_endpoints;
        struct tb_error err = { 0 };
        int status;

        trial_hold_operator_signals();
        TB_PHASE("run");
        trial_prestart(&t);
        int r = trial_validate(&t, &err);
        TB_PHASE("validated");
        /* A bwrap that cannot be started early, or limits that cannot be
         * enforced (sandbox_unavailable), make a void Trial, whose record
         * is written: after the setup. */
        struct tb_error early_err = { 0 };
        int early = r >= 0 ? trial_start_early(&t, &early_err) : 0;
        if (r >= 0)
                r = trial_load(&t, &err);
        /* Listed while the spec is built, by a thread on another CPU (in a
         * batch whose Trials fill the CPUs, only when one looks idle); else,
         * or when the masks need the list before it began, the masks make
         * it. Joined in trial_done(). Not with bwrap started early: then
         * the other namespaces' are listed after bwrap's options are sent
         * (trial_finish_spec), and this one's alone costs less than a
         * thread's start.
         * After the plugin is loaded: while a thread of trialbox runs on
         * another CPU, each change dlopen makes to the mappings (its
         * mprotect and munmap calls) must be flushed from that CPU too (an
         * interrupt there; in a virtual machine, a costly one): dlopen took
         * 0.15 ms with the thread started before it, 0.07 ms without. */
        if (r >= 0 && !opt->no_sandbox && t.net.mode != TRIAL_NETWORK_HOST)
                t.sockets = t.started ? NULL : host_sockets_start();
        TB_PHASE("loaded");
        if (r < 0) {
                log_error("%s", err.msg);
                trial_done(&t);
                return TB_EXIT_USAGE;
        }
        r = trial_setup(&t, &err);
        TB_PHASE("setup");
        if (r >= 0 && early < 0) {
                err = early_err;
                r = early;
        }
        if (r >= 0)
                r = trial_prepare(&t, &err);
        TB_PHASE("prepared");
        if (r >= 0)
                r = trial_execute(&t, &err);
        TB_PHASE("executed");
        /* A Trial void before its session: bwrap, started early, ran nothing. */
        supervisor_abort(TAKE_PTR(t.started));
        if (r < 0 && (opt->dry_run || !trial_interrupted_before_start(&t, err.msg)))
                outcome_set_void(&t.outcome, t.cause, err.msg);

        if (opt->dry_run) { /* nothing is written: a void is said, and that is all */
                if (r < 0)
                        log_error("%s: void (%s): %s", opt->harness, outcome_cause_name(t.cause), err.msg);
                status = r < 0 ? TB_EXIT_VOID : 0;
        } else if (trial_finish(&t, &err) < 0) {
                log_error("%s", err.msg);
                status = TB_EXIT_ERROR;
        } else {
                status = outcome_exit_status(&t.outcome);
        }
        trial_done(&t);
        return status;
}
