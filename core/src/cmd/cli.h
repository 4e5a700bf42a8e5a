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

#endif
