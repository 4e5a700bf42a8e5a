/* What the command line knows of each command, as plain data: its name, its
 * handler and summary (the one table, cli.c), and its usage: the synopsis,
 * the options (the parser's table, options.c, and the --help rows, help.c)
 * and the exit statuses. man/trialbox.1 says the same in roff;
 * tests/unit/test_help.c fails when the two differ. */
#ifndef TB_CMD_COMMAND_H
#define TB_CMD_COMMAND_H

#include <stdbool.h>
#include <stddef.h>

struct tb_env;
struct cli_command;

/* How an option's value is taken (options.c's one parse loop). */
enum cli_option_kind {
        CLI_HEADING, /* not an option: `help` starts a group of rows in --help */
        CLI_FLAG,    /* the bool at `offset` is set */
        CLI_COUNT,   /* the int at `offset` is counted up (-v -v) */
        CLI_STRING,  /* the const char * at `offset` points at the value (into argv) */
        CLI_CALL,    /* `call` takes the value (NULL when the option has none) */
        CLI_HELP,    /* prints the command's --help; the command runs nothing */
};

/* Flags of an option. */
#define CLI_ONCE 1u     /* given twice is a usage error */
#define CLI_NONEMPTY 2u /* an empty value is a usage error */

struct cli_option {
        enum cli_option_kind kind;
        const char *name;     /* the long name without "--", or NULL */
        char short_name;      /* 'v' for -v, or 0 */
        const char *metavar;  /* the value's name in --help ("DIR"); NULL: the option takes no value */
        unsigned flags;       /* CLI_ONCE, CLI_NONEMPTY */
        const char *needs;    /* what a missing or empty value is called: "option '--x' needs
                                 <needs>" ("a file"); NULL: "a value", "a non-empty value" */
        size_t offset;        /* where in the command's arguments struct (offsetof) */
        /* CLI_CALL: take `value`; 0, or the status of a usage error already printed. */
        int (*call)(const struct cli_command *cmd, const struct cli_option *o, const char *value, void *args);
        const char *help;     /* its --help text (lines after the first indented by help.c);
                                 a heading's text */
};

/* One exit status of a command: "0", "128+N"; what it means. */
struct cli_status {
        const char *status;
        const char *meaning;
};

struct cli_usage {
        const char *synopsis;    /* "trialbox run --harness NAME ...", one line (help.c wraps it) */
        const char *description; /* what the command does, lines ending "\n" */
        bool stop_at_argument;   /* options end at the first argument (run's session arguments) */
        const struct cli_option *options;
        size_t n_options;
        const struct cli_status *statuses;
        size_t n_statuses;
};

/* A command: `trialbox NAME ARGS...`. The handler gets argv from the command's
 * name on (argv[0] is NAME) and returns the exit status. */
struct cli_command {
        const char *name;
        int (*main)(const struct cli_command *self, const struct tb_env *env, int argc, char **argv);
        const char *summary; /* one line, for `trialbox --help` */
        const struct cli_usage *usage;
};

#endif
