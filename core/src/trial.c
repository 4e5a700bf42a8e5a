#define _GNU_SOURCE
#include "trial.h"

#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "host.h"
#include "outcome.h"
#include "plugin_loader.h"
#include "repo_guard.h"
#include "supervisor.h"
#include "toolchain.h"

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *msg = NULL;
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);
        fprintf(stderr, "trialbox: %s\n", msg ? str_printable(msg) : "usage error");
        return TB_EXIT_USAGE;
}

static void add_allowed(struct sandbox_spec *spec, const char *list)
{
        _cleanup_free_ char *copy = xstrdup(list);
        char *save = NULL;
        for (char *name = strtok_r(copy, ":, ", &save); name; name = strtok_r(NULL, ":, ", &save)) {
                const char *v = getenv(name);
                if (v && sandbox_env_name_valid(name))
                        sandbox_setenv(spec, name, v, false);
        }
}

void trial_add_allowed_env(struct sandbox_spec *spec, bool sandboxed)
{
        sandbox_setenv(spec, "PATH", host_path(), false);
        add_allowed(spec, TRIAL_ENV_ALLOW);
        /* Unsandboxed, the session shares the real home and its layout. */
        if (!sandboxed)
                add_allowed(spec, "HOME:XDG_CONFIG_HOME:XDG_CACHE_HOME:XDG_DATA_HOME:XDG_STATE_HOME:XDG_RUNTIME_DIR");
        const char *extra = getenv("TRIALBOX_ENV_ALLOW");
        if (extra)
                add_allowed(spec, extra);
}

static char *real_home(void)
{
        const char *h = getenv("HOME");
        if (h && h[0] == '/')
                return xstrdup(h);
        struct passwd *pw = getpwuid(getuid());
        return xstrdup(pw && pw->pw_dir ? pw->pw_dir : "/");
}

/* `p` made absolute against the working folder, links not resolved. */
static char *make_absolute(const char *p)
{
        char cwd[PATH_MAX];
        if (p[0] == '/')
                return xstrdup(p);
        return xasprintf("%s/%s", getcwd(cwd, sizeof cwd) ? cwd : ".", p);
}

/* The real path `p` will have: its existing part resolved (links followed),
 * the parts that do not exist yet appended. NULL with errno EINVAL for a "."
 * or ".." among those. */
static char *resolve_new_path(const char *p)
{
        char *r = realpath(p, NULL);
        if (r)
                return r;
        _cleanup_free_ char *abs = make_absolute(p);
        size_t n = strlen(abs);
        while (n > 1 && abs[n - 1] == '/')
                abs[--n] = '\0';
        char *slash = strrchr(abs, '/');
        const char *last = slash + 1;
        if (!*last || strcmp(last, ".") == 0 || strcmp(last, "..") == 0) {
                errno = EINVAL;
                return NULL;
        }
        /* Resolve the parent, then put the last part back on it. */
        *slash = '\0';
        _cleanup_free_ char *parent_real = resolve_new_path(slash == abs ? "/" : abs);
        *slash = '/';
        if (!parent_real)
                return NULL;
        return xasprintf("%s/%s", strcmp(parent_real, "/") == 0 ? "" : parent_real, last);
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
        sandbox_setenv(spec, "TMPDIR", "/tmp", false);
}

static char *find_bwrap(void)
{
        const char *over = getenv("TRIALBOX_BWRAP");
        if (over && *over)
                return access(over, X_OK) == 0 ? xstrdup(over) : NULL;
        return find_on_path("bwrap", host_path());
}

/* Everything a Trial holds, freed in one place. */
struct trial {
        const struct trial_options *opt;
        char *repo, *output, *home, *user_home, *bin, *bwrap, *skills;
        struct plugin plugin;
        struct sandbox_spec spec;
        struct tb_host host;
        struct outcome outcome;
        struct repo_guard guard;
        long long start_ms;
};

static void trial_free(struct trial *t)
{
        host_free(&t->host);
        repo_guard_done(&t->guard);
        sandbox_spec_free(&t->spec);
        plugin_unload(&t->plugin);
        free(t->repo);
        free(t->output);
        free(t->home);
        free(t->user_home);
        free(t->bin);
        free(t->bwrap);
        free(t->skills);
}

/* Check the request; usage errors print one line and return TB_EXIT_USAGE. */
static int trial_validate(struct trial *t)
{
        const struct trial_options *opt = t->opt;
        struct stat st;

        if (!plugin_name_valid(opt->harness))
                return usage_error("'%s' is not a harness name (lowercase letters, digits, '-' and '_'); see "
                                   "'trialbox harnesses'",
                                   opt->harness);
        if (stat(opt->repo, &st) < 0)
                return usage_error("repository '%s': %s; pass the prepared repository's folder with --repo",
                                   opt->repo, strerror(errno));
        if (!S_ISDIR(st.st_mode))
                return usage_error("repository '%s' is not a folder; pass the prepared repository's folder with --repo",
                                   opt->repo);
        t->repo = realpath(opt->repo, NULL);
        if (!t->repo)
                return usage_error("repository '%s': %s", opt->repo, strerror(errno));
        if (opt->skills) {
                if (stat(opt->skills, &st) < 0 || !S_ISDIR(st.st_mode))
                        return usage_error("skills folder '%s' is not a folder; pass an existing folder with --skills",
                                           opt->skills);
                t->skills = realpath(opt->skills, NULL);
        }

        if (lstat(opt->output_dir, &st) == 0) {
                if (S_ISLNK(st.st_mode))
                        return usage_error("output folder '%s' is a symbolic link; pass the real folder", opt->output_dir);
                if (!S_ISDIR(st.st_mode))
                        return usage_error("output folder '%s' is not a folder; pass a new or empty folder",
                                           opt->output_dir);
        } else if (errno != ENOENT) {
                return usage_error("output folder '%s': %s", opt->output_dir, strerror(errno));
        }
        t->output = resolve_new_path(opt->output_dir);
        if (!t->output)
                return usage_error("output folder '%s' has '.' or '..' where it does not exist yet; pass a plain path",
                                   opt->output_dir);
        if (path_is_under(t->output, t->repo))
                return usage_error("output folder '%s' is inside the repository '%s', where the session could read "
                                   "its home; choose a folder outside it",
                                   t->output, t->repo);
        _cleanup_free_ char *home = xasprintf("%s/home", t->output);
        _cleanup_free_ char *outcome = xasprintf("%s/outcome.json", t->output);
        if (lstat(home, &st) == 0 || lstat(outcome, &st) == 0)
                return usage_error("output folder '%s' already holds a Trial; give each Trial a new folder", t->output);
        t->user_home = real_home();
        t->home = opt->no_sandbox ? xstrdup(t->user_home) : steal_pointer(&home);
        return 0;
}

/* End the Trial: write the Outcome, print it, return the exit status. */
static int trial_finish(struct trial *t)
{
        struct tb_error err = { 0 };
        t->outcome.duration_ms = now_ms() - t->start_ms;
        if (outcome_write(&t->outcome, t->output, &err) < 0) {
                fprintf(stderr, "trialbox: %s\n", err.msg);
                return TB_EXIT_ERROR;
        }
        if (t->opt->json) {
                _cleanup_free_ char *json = outcome_to_json(&t->outcome);
                fflush(stdout);
                printf("%s\n", json);
                fflush(stdout);
        }
        const struct outcome *o = &t->outcome;
        if (o->kind == OUTCOME_VOID)
                host_logf(t->opt->verbosity, TB_LOG_ERROR, "%s: void (%s): %s", o->harness,
                          outcome_cause_name(o->cause), o->detail);
        else
                host_notice(t->opt->verbosity, "%s: %s: %s, in %lld ms; see %s/outcome.json", o->harness,
                          outcome_kind_name(o->kind), o->detail, o->duration_ms, t->output);
        return outcome_exit_status(o);
}

static int trial_void(struct trial *t, enum outcome_cause cause, const char *detail)
{
        outcome_set_void(&t->outcome, cause, detail);
        return t->opt->dry_run ? (host_logf(t->opt->verbosity, TB_LOG_ERROR, "%s: void (%s): %s", t->opt->harness,
                                            outcome_cause_name(cause), detail),
                                  TB_EXIT_VOID)
                               : trial_finish(t);
}

static int trial_build_spec(struct trial *t, struct tb_error *err)
{
        struct sandbox_spec *spec = &t->spec;
        const bool sandboxed = !t->opt->no_sandbox;

        trial_add_allowed_env(spec, sandboxed);
        if (!sandboxed) {
                strv_add(&spec->command, t->bin);
                spec->chdir = xstrdup(t->repo);
                return 0;
        }
        struct toolchain_host th = {
                .path = host_path(),
                .home = t->user_home,
                .tools = getenv("TRIALBOX_TOOLCHAINS"),
                .cargo_home = getenv("CARGO_HOME"),
                .rustup_home = getenv("RUSTUP_HOME"),
                .pyenv_root = getenv("PYENV_ROOT"),
        };
        set_home_env(spec, t->home);
        toolchain_add_system(spec, TOOLCHAIN_RESOLV_CONF);
        toolchain_add_tools(spec, &th);
        _cleanup_free_ char *run_path = toolchain_add_harness(spec, t->opt->harness, t->bin, &th);
        if (t->skills) {
                sandbox_add(spec, SANDBOX_RO_BIND, t->skills, t->skills);
                _cleanup_free_ char *given = make_absolute(t->opt->skills);
                if (strcmp(given, t->skills) != 0)
                        sandbox_add(spec, SANDBOX_RO_BIND, t->skills, given);
        }
        sandbox_add(spec, SANDBOX_BIND, t->repo, t->repo);
        /* After the system binds, which it is checked not to override. */
        const struct repo_guard_host gh = {
                .repo = t->repo, .host_home = t->user_home, .session_home = t->home, .dry_run = t->opt->dry_run,
                .path = host_path(),
        };
        int r = repo_guard_open(&t->guard, &gh, spec, err);
        if (r < 0)
                return r;
        if (t->guard.refused)
                host_logf(t->opt->verbosity, TB_LOG_WARNING, "the worktree's git directory is not bound: %s",
                          t->guard.refused);
        repo_guard_add_binds(&t->guard, spec);
        sandbox_add(spec, SANDBOX_BIND, t->home, t->home);
        strv_add(&spec->command, run_path);
        spec->chdir = xstrdup(t->repo);
        return 0;
}

/* Load the plugin, find the binaries, make the output folder. Returns -1
 * to go on, or the exit status to end with. */
static int trial_setup(struct trial *t)
{
        const struct trial_options *opt = t->opt;
        struct tb_error err = { 0 };

        int status = trial_validate(t);
        if (status != 0)
                return status;
        if (plugin_load(opt->harness, &t->plugin, &err) < 0)
                return usage_error("%s", err.msg);
        if (!opt->dry_run) {
                int r = mkdir_p(t->output, 0755);
                if (r < 0)
                        return usage_error("cannot create output folder '%s': %s; choose a writable folder", t->output,
                                           strerror(-r));
        }
        t->outcome = (struct outcome){
                .harness = opt->harness,
                .exit_code = -1,
                .sandboxed = !opt->no_sandbox,
                .home = t->home,
        };
        t->host = (struct tb_host){
                .harness = opt->harness,
                .spec = &t->spec,
                .sandboxed = !opt->no_sandbox,
                .host_home = t->user_home,
                .session_home = t->home,
                .verbosity = opt->verbosity,
                .dry_run = opt->dry_run,
                .credentials_path = opt->credentials,
        };

        const char *want = opt->harness_bin ? opt->harness_bin : t->plugin.harness->default_binary;
        t->bin = find_on_path(want, host_path());
        if (!t->bin) {
                _cleanup_free_ char *d = xasprintf("the %s binary '%s' was not found%s; install it or pass --harness-bin",
                                                   opt->harness, want, strchr(want, '/') ? "" : " on the PATH");
                return trial_void(t, CAUSE_SESSION_UNAVAILABLE, d);
        }
        if (!opt->no_sandbox) {
                t->bwrap = find_bwrap();
                if (!t->bwrap)
                        return trial_void(t, CAUSE_SANDBOX_UNAVAILABLE,
                                          getenv("TRIALBOX_BWRAP")
                                                  ? "TRIALBOX_BWRAP does not name an executable bwrap; fix it or unset it"
                                                  : "bwrap was not found on the PATH; install bubblewrap (apt-get "
                                                    "install bubblewrap)");
        }
        return -1;
}

/* Build the spec through the plugin's hooks. Returns -1 to go on, or the exit status. */
static int trial_prepare(struct trial *t)
{
        /* The fresh home first: logins and configs are put into it. */
        if (!t->opt->no_sandbox && !t->opt->dry_run) {
                int r = make_fresh_home(t->home);
                if (r < 0) {
                        _cleanup_free_ char *d =
                                xasprintf("cannot create the fresh home '%s': %s", t->home, strerror(-r));
                        return trial_void(t, CAUSE_SESSION_UNAVAILABLE, d);
                }
        }
        struct tb_error err = { 0 };
        if (trial_build_spec(t, &err) < 0)
                return trial_void(t, CAUSE_SESSION_UNAVAILABLE, err.msg);
        int r = host_call(&t->host, t->plugin.preflight);
        if (r >= 0)
                r = host_call(&t->host, t->plugin.prepare_login);
        if (r >= 0)
                r = host_call(&t->host, t->plugin.env);
        if (r < 0) {
                _cleanup_free_ char *d =
                        t->host.voided         ? xstrdup(t->host.void_detail)
                        : t->host.fail_detail[0] ? xasprintf("the %s login could not be handed over: %s",
                                                             t->opt->harness, t->host.fail_detail)
                                               : xasprintf("the %s plugin failed: %s", t->opt->harness, strerror(-r));
                return trial_void(t, CAUSE_SESSION_UNAVAILABLE, d);
        }
        /* Last: a void Trial leaves nothing in the fresh home. */
        if (!t->opt->no_sandbox && !t->opt->dry_run &&
            repo_guard_write_identity(host_path(), t->user_home, t->home, &err) < 0)
                return trial_void(t, CAUSE_SESSION_UNAVAILABLE, err.msg);
        for (char **a = t->opt->session_args; a && *a; a++)
                strv_add(&t->spec.command, *a);
        return -1;
}

/* Run the session and write its Outcome. Returns the exit status. */
static int trial_execute(struct trial *t)
{
        const struct trial_options *opt = t->opt;
        struct tb_error err = { 0 };
        _cleanup_free_ char *line = sandbox_render(&t->spec, t->bwrap);

        if (opt->dry_run) {
                printf("%s\n", line);
                return 0;
        }
        host_logf(opt->verbosity, TB_LOG_INFO, "plugin '%s'", t->plugin.path);
        host_logf(opt->verbosity, TB_LOG_INFO, "running: %s", line);

        struct strv argv = { 0 }, envp = { 0 };
        if (t->bwrap)
                sandbox_argv(&t->spec, t->bwrap, &argv);
        else
                for (size_t i = 0; i < t->spec.command.n; i++)
                        strv_add(&argv, t->spec.command.v[i]);
        sandbox_envp(&t->spec, &envp);
        struct supervisor_watch logins = {
                .fd = t->host.logins.inotify_fd,
                .ready = login_sync_ready,
                .finish = login_sync_finish,
                .ctx = &t->host.logins,
        };
        struct supervisor_run run = {
                .argv = argv.v,
                .envp = envp.v,
                .cwd = t->spec.chdir,
                .bwrap = t->bwrap != NULL,
                .watches = t->host.logins.watching ? &logins : NULL,
                .n_watches = t->host.logins.watching ? 1 : 0,
        };
        struct session_result res;
        int r = supervisor_run(&run, &res, &err);
        for (size_t i = 0; i < envp.n; i++)
                explicit_bzero(envp.v[i], strlen(envp.v[i]));
        strv_free(&argv);
        strv_free(&envp);
        /* Whatever the session's end, before anything else runs git there. */
        struct strv undone = { 0 };
        repo_guard_restore(&t->guard, &undone);
        for (size_t i = 0; i < undone.n; i++)
                host_logf(opt->verbosity, TB_LOG_WARNING, "%s", undone.v[i]);
        strv_free(&undone);
        if (r < 0)
                return trial_void(t, CAUSE_SANDBOX_UNAVAILABLE, err.msg);
        outcome_from_session(&t->outcome, &res);
        return trial_finish(t);
}

int trial_run(const struct trial_options *opt)
{
        struct trial t = { .opt = opt, .start_ms = now_ms() };
        int status = trial_setup(&t);
        if (status < 0)
                status = trial_prepare(&t);
        if (status < 0)
                status = trial_execute(&t);
        trial_free(&t);
        return status;
}
