#include "cmd/help.h"

#include <string.h>

#define WIDTH 80          /* a synopsis is wrapped to this */
#define OPTION_COLUMN 24  /* where an option's text starts */
#define STATUS_COLUMN 10  /* where an exit status's meaning starts */
#define COMMAND_COLUMN 15 /* where a command's summary starts */

/* The length of the synopsis unit at `s`: up to the next space outside
 * brackets, so that "[--timeout DURATION [--kill-after DURATION]]" stays whole. */
static size_t unit_length(const char *s)
{
        int depth = 0;
        size_t n = 0;
        for (; s[n] && (s[n] != ' ' || depth > 0); n++)
                depth += s[n] == '[' ? 1 : s[n] == ']' ? -1 : 0;
        return n;
}

/* `prefix` and `synopsis`, wrapped between its units; a continuation line is
 * indented to the command's first argument ("trialbox run " ends at it). */
static void print_synopsis(const char *prefix, const char *synopsis, FILE *out)
{
        const char *second_space = strchr(synopsis, ' ');
        second_space = second_space ? strchr(second_space + 1, ' ') : NULL;
        size_t indent = strlen(prefix) + (second_space ? (size_t)(second_space - synopsis) + 1 : 0);
        size_t col = strlen(prefix);
        fputs(prefix, out);
        for (const char *s = synopsis; *s;) {
                size_t n = unit_length(s);
                if (s != synopsis && col + 1 + n > WIDTH) {
                        fprintf(out, "\n%*s", (int)indent, "");
                        col = indent;
                } else if (s != synopsis) {
                        fputc(' ', out);
                        col++;
                }
                fwrite(s, 1, n, out);
                col += n;
                s += n;
                while (*s == ' ')
                        s++;
        }
        fputc('\n', out);
}

/* "  HEAD" then `text` at `column` (on the next line when HEAD reaches it);
 * each further line of `text` indented to `column` too. */
static void print_row(const char *head, const char *text, int column, FILE *out)
{
        int used = fprintf(out, "  %s", head);
        if (used + 2 > column) {
                fputc('\n', out);
                used = 0;
        }
        for (const char *line = text; *line;) {
                size_t n = strcspn(line, "\n");
                fprintf(out, "%*s%.*s\n", column - used, "", (int)n, line);
                used = 0;
                line += n + (line[n] == '\n');
        }
}

/* "-v, --verbose", "--harness NAME", "--json". */
static void option_head(const struct cli_option *o, char *buf, size_t n)
{
        size_t len = 0;
        buf[0] = '\0';
        if (o->short_name)
                len += (size_t)snprintf(buf, n, "-%c%s", o->short_name, o->name ? ", " : "");
        if (o->name && len < n)
                len += (size_t)snprintf(buf + len, n - len, "--%s", o->name);
        if (o->metavar && len < n)
                snprintf(buf + len, n - len, " %s", o->metavar);
}

static void print_options(const struct cli_usage *u, FILE *out)
{
        char head[96];
        bool headed = false;
        for (size_t i = 0; i < u->n_options; i++) {
                const struct cli_option *o = &u->options[i];
                if (o->kind == CLI_HEADING) {
                        fprintf(out, "\n%s\n", o->help);
                        headed = true;
                        continue;
                }
                if (o->kind == CLI_HELP)
                        continue;
                if (!headed)
                        fputs("\noptions:\n", out);
                headed = true;
                option_head(o, head, sizeof head);
                print_row(head, o->help, OPTION_COLUMN, out);
        }
}

void cli_help_print(const struct cli_command *cmd, FILE *out)
{
        const struct cli_usage *u = cmd->usage;
        print_synopsis("usage: ", u->synopsis, out);
        fprintf(out, "\n%s", u->description);
        print_options(u, out);
        fputs("\nexit status:\n", out);
        for (size_t i = 0; i < u->n_statuses; i++)
                print_row(u->statuses[i].status, u->statuses[i].meaning, STATUS_COLUMN, out);
}

void cli_help_print_all(const struct cli_command *commands, size_t n, const char *last_synopsis,
                        const char *description, FILE *out)
{
        for (size_t i = 0; i < n; i++)
                print_synopsis(i ? "       " : "usage: ", commands[i].usage->synopsis, out);
        print_synopsis("       ", last_synopsis, out);
        fprintf(out, "\n%s\ncommands:\n", description);
        for (size_t i = 0; i < n; i++)
                print_row(commands[i].name, commands[i].summary, COMMAND_COLUMN, out);
        fputs("\n'trialbox help COMMAND' (or 'trialbox COMMAND --help') lists its options and exit\n"
              "statuses; man trialbox says everything.\n",
              out);
}
