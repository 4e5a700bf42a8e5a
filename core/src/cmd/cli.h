/* The command line: parse, dispatch to run / harnesses / check, print help. */
#ifndef TB_CLI_H
#define TB_CLI_H

#include <stddef.h>

/* trialbox's main: returns the exit status. */
int cli_main(int argc, char **argv);

/* Parse `run`'s arguments (argv[0] is "run") into `out` (pointing into argv).
 * Returns 0 to run the Trial, 1 when --help was printed, or TB_EXIT_USAGE
 * after printing the one-line error. Runs nothing; the environment
 * (TRIALBOX_NO_SANDBOX) is the caller's to apply. */
struct trial_options;
int cli_parse_run(int argc, char **argv, struct trial_options *out);

/* A usage error of `trialbox CMD`: one line on stderr ending "; see
 * 'trialbox CMD--help'" (`cmd` is "run ", "credentials ", … or ""); returns
 * TB_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* `trialbox check` and `trialbox harnesses` (check.c, harnesses.c); the
 * verbosity is the logger's. */
struct tb_env;
int check_main(const struct tb_env *env, const char *harness, int json);
int harnesses_main(const struct tb_env *env, int json);
/* `trialbox batch …` (argv[0] is "batch"): parse, then batch_run. */
int batch_main(const struct tb_env *env, int argc, char **argv);

/* Is a loaded plugin's Harness ready here? Its binary on the PATH, and its
 * preflight (run in checking mode, changing nothing) satisfied. */
struct plugin;
struct readiness {
        char *binary;  /* resolved binary, or NULL */
        int ready;
        int login_ok;  /* the plugin's preflight passed */
        char *detail;  /* why not ready (the login's reason first), or NULL */
        char **notes;  /* what the plugin looked for (NULL-terminated, may be NULL) */
        size_t n_notes;
};
void readiness_check(const struct plugin *p, const struct tb_env *env, struct readiness *out);
void readiness_done(struct readiness *r);

/* The endpoints the plugin declares (its `endpoints` hook, asked the way
 * `check` asks preflight: changing nothing), into `host` (host_done it). */
struct tb_host;
void endpoints_check(const struct plugin *p, const struct tb_env *env, struct tb_host *host);

#endif
