/* The command line: the table of commands, the dispatch, and the commands'
 * entry points (one file each in cmd/). */
#ifndef TB_CLI_H
#define TB_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "cmd/command.h"

/* trialbox's main: returns the exit status. */
int cli_main(int argc, char **argv);

/* The commands, in the order `trialbox --help` lists them (cli.c). */
extern const struct cli_command cli_commands[];
extern const size_t cli_n_commands;

/* The command named `name`, or NULL. */
const struct cli_command *cli_command_find(const char *name);

/* What `trialbox --help` prints (to stdout; with no command at all, to
 * stderr with status 2). */
void cli_print_usage(FILE *out);
/* Its last synopsis line, beside every command's. */
#define CLI_GLOBAL_SYNOPSIS "trialbox --help | --version"

/* The commands' handlers and usages (run.c, batch.c, ...); the table joins them. */
int cmd_run(const struct cli_command *self, const struct tb_env *env, int argc, char **argv);
int cmd_plan(const struct cli_command *self, const struct tb_env *env, int argc, char **argv);
int cmd_grade(const struct cli_command *self, const struct tb_env *env, int argc, char **argv);
int cmd_batch(const struct cli_command *self, const struct tb_env *env, int argc, char **argv);
int cmd_report(const struct cli_command *self, const struct tb_env *env, int argc, char **argv);
int cmd_harnesses(const struct cli_command *self, const struct tb_env *env, int argc, char **argv);
int cmd_check(const struct cli_command *self, const struct tb_env *env, int argc, char **argv);
int cmd_credentials(const struct cli_command *self, const struct tb_env *env, int argc, char **argv);
int cmd_help(const struct cli_command *self, const struct tb_env *env, int argc, char **argv);
extern const struct cli_usage cmd_run_usage, cmd_plan_usage, cmd_grade_usage, cmd_batch_usage, cmd_report_usage, cmd_harnesses_usage,
        cmd_check_usage, cmd_credentials_usage, cmd_help_usage;

/* TRIALBOX_CPUS_BUSY: unset, empty or 0, or 1 (every CPU this process may
 * use is taken by work like its own: base/cpus.h), applied; any other value
 * is TB_EXIT_USAGE after its one-line error. For the commands that start
 * sandboxes: run, grade, and batch, whose Trials inherit it. */
int cli_cpus_busy_from_env(const struct tb_env *env);

/* Parse `run`'s arguments (argv[0] is "run") into `out` (pointing into argv).
 * Returns 0 to run the Trial, 1 when --help was printed, or TB_EXIT_USAGE
 * after printing the one-line error. Runs nothing; the environment
 * (TRIALBOX_NO_SANDBOX) is the caller's to apply. */
struct trial_options;
int cli_parse_run(int argc, char **argv, struct trial_options *out);

/* `trialbox credentials set KEY | unset KEY | list` (credentials.c), argv[0]
 * being "credentials". `path_override` is the Credentials file when not NULL
 * (--credentials FILE wins; NULL: the default file, found through `env`);
 * what it says is the logger's verbosity (log.h). `set` reads the value from
 * stdin (never argv; with echo off and a prompt when stdin is a terminal),
 * strips one trailing "\n" (or "\r\n"), and refuses an empty value or one
 * with a NUL byte. `list` prints names only, one per line. Returns the exit
 * status: 0, 2 for a usage error, 1 for any other failure (each with one
 * line on stderr). */
int credentials_main(const struct tb_env *env, int argc, char **argv, const char *path_override);

#endif
