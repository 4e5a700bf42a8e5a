/* The one parse loop: a command's argv read by its table of options
 * (command.h), with getopt_long's rules (long options may be abbreviated;
 * --name=value and --name value; -vq). The messages are the same for every
 * command: "option '--x' needs a value", "unknown option '--x'", "option
 * '--x' takes no value: '--x=1'", "option '--x' given twice", "option '--x'
 * needs a non-empty value" (an option may name its value instead: "option
 * '--credentials' needs a file"). */
#ifndef TB_CMD_OPTIONS_H
#define TB_CMD_OPTIONS_H

#include "cmd/command.h"

/* The most options a command may have (its table's rows, headings included). */
#define CLI_MAX_OPTIONS 40

/* What cli_parse() returns when it printed the command's --help. */
#define CLI_HELP_SHOWN 1

/* Parse argv[1..] (argv[0] is the command's name) by `cmd`'s table into
 * `args`, the command's own struct the table's offsets point into. Returns 0
 * with *first_arg the index of the first argument that is not an option (the
 * options and the arguments are permuted into that order unless the command
 * stops at its first argument); CLI_HELP_SHOWN when --help was printed; or
 * TB_EXIT_USAGE after the one-line error. The values point into argv. */
int cli_parse(const struct cli_command *cmd, int argc, char **argv, void *args, int *first_arg);

/* The verbosity of -v (counted) and -q: 0 with -q, else 1 + v; -v with -q is a
 * usage error of `cmd` (TB_EXIT_USAGE, said). */
int cli_verbosity(const struct cli_command *cmd, int v, int q, int *out);

/* "--name", or "-c" for an option with only a short name, into buf. */
const char *cli_option_name(const struct cli_option *o, char *buf, size_t n);

#endif
