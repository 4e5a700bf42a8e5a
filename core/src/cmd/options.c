#define _GNU_SOURCE
#include "cmd/options.h"

#include <assert.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmd/exit.h"
#include "cmd/help.h"

/* getopt_long's value for an option without a short name: its row + this. */
#define LONG_ONLY_BASE 256

const char *cli_option_name(const struct cli_option *o, char *buf, size_t n)
{
        if (o->name)
                snprintf(buf, n, "--%s", o->name);
        else
                snprintf(buf, n, "-%c", o->short_name);
        return buf;
}

/* getopt_long's tables for `u`: the long options and the short ones
 * ("+:" or ":" first: a missing value is ':', never '?'). */
static void getopt_tables(const struct cli_usage *u, struct option *longopts, char *shortopts)
{
        size_t nl = 0, ns = 0;
        assert(u->n_options <= CLI_MAX_OPTIONS);
        if (u->stop_at_argument)
                shortopts[ns++] = '+';
        shortopts[ns++] = ':';
        for (size_t i = 0; i < u->n_options; i++) {
                const struct cli_option *o = &u->options[i];
                if (o->kind == CLI_HEADING)
                        continue;
                int has_arg = o->metavar ? required_argument : no_argument;
                int val = o->short_name ? o->short_name : LONG_ONLY_BASE + (int)i;
                if (o->name)
                        longopts[nl++] = (struct option){ o->name, has_arg, NULL, val };
                if (o->short_name) {
                        shortopts[ns++] = o->short_name;
                        if (o->metavar)
                                shortopts[ns++] = ':';
                }
        }
        longopts[nl] = (struct option){ 0 };
        shortopts[ns] = '\0';
}

/* The row getopt_long's value `c` stands for, or NULL. */
static const struct cli_option *option_of(const struct cli_usage *u, int c)
{
        if (c >= LONG_ONLY_BASE)
                return (size_t)(c - LONG_ONLY_BASE) < u->n_options ? &u->options[c - LONG_ONLY_BASE] : NULL;
        for (size_t i = 0; c > 0 && i < u->n_options; i++)
                if (u->options[i].kind != CLI_HEADING && u->options[i].short_name == c)
                        return &u->options[i];
        return NULL;
}

/* getopt_long's ':' (a value missing) or '?' (anything else it refused). */
static int refused(const struct cli_command *cmd, int c, char **argv)
{
        const struct cli_option *o = option_of(cmd->usage, optopt);
        const char *arg = optind > 0 && argv[optind - 1] ? argv[optind - 1] : "?";
        char name[64];
        if (c == ':' && o)
                return cli_usage_error(cmd->name, "option '%s' needs %s", cli_option_name(o, name, sizeof name),
                                       o->needs ? o->needs : "a value");
        /* A known option refused is one given a value it does not take. */
        if (o)
                return cli_usage_error(cmd->name, "option '%s' takes no value: '%s'",
                                       cli_option_name(o, name, sizeof name), arg);
        if (optopt > 0 && optopt < LONG_ONLY_BASE)
                return cli_usage_error(cmd->name, "unknown option '-%c'", optopt);
        return cli_usage_error(cmd->name, "unknown option '%s'", arg);
}

/* Take the option `o` (its row's index `i`) with `value`. */
static int take(const struct cli_command *cmd, size_t i, const char *value, unsigned char *seen, void *args)
{
        const struct cli_option *o = &cmd->usage->options[i];
        char name[64];
        if ((o->flags & CLI_ONCE) && seen[i])
                return cli_usage_error(cmd->name, "option '%s' given twice", cli_option_name(o, name, sizeof name));
        seen[i] = 1;
        if ((o->flags & CLI_NONEMPTY) && value && !value[0])
                return cli_usage_error(cmd->name, "option '%s' needs %s", cli_option_name(o, name, sizeof name),
                                       o->needs ? o->needs : "a non-empty value");
        switch (o->kind) {
        case CLI_FLAG:
                *(bool *)(void *)((char *)args + o->offset) = true;
                return 0;
        case CLI_COUNT:
                (*(int *)(void *)((char *)args + o->offset))++;
                return 0;
        case CLI_STRING:
                *(const char **)(void *)((char *)args + o->offset) = value;
                return 0;
        case CLI_CALL:
                return o->call(cmd, o, value, args);
        case CLI_HELP:
                cli_help_print(cmd, stdout);
                return CLI_HELP_SHOWN;
        case CLI_HEADING:
                break;
        }
        return 0;
}

int cli_parse(const struct cli_command *cmd, int argc, char **argv, void *args, int *first_arg)
{
        const struct cli_usage *u = cmd->usage;
        struct option longopts[CLI_MAX_OPTIONS + 1];
        char shortopts[2 * CLI_MAX_OPTIONS + 3];
        unsigned char seen[CLI_MAX_OPTIONS] = { 0 };
        int c;

        getopt_tables(u, longopts, shortopts);
        opterr = 0;
        optind = 0; /* a full reset: the parser may run more than once */
        while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
                const struct cli_option *o = c == ':' || c == '?' ? NULL : option_of(u, c);
                if (!o)
                        return refused(cmd, c, argv);
                int r = take(cmd, (size_t)(o - u->options), optarg, seen, args);
                if (r != 0)
                        return r;
        }
        *first_arg = optind;
        return 0;
}

int cli_verbosity(const struct cli_command *cmd, int v, int q, int *out)
{
        if (v && q)
                return cli_usage_error(cmd->name, "-v and -q cannot be used together");
        *out = q ? 0 : 1 + v;
        return 0;
}
