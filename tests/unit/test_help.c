/* The usage text exists once: man/trialbox.1 is the reference, and what
 * --help prints (from the command table, cmd/) must say the same. Each test
 * reads both and fails, listing every difference, when they disagree:
 *   - the commands: the table's names, in order, are the man page's SYNOPSIS
 *     lines and its COMMANDS subsections;
 *   - each command's synopsis, word for word ("usage: " in --help, the
 *     SYNOPSIS line in the man page, both with their whitespace collapsed);
 *   - each command's options: the rows of its --help, the .TP items of the
 *     man page (OPTIONS and LIMITS for run; COMMANDS' subsection for the others);
 *   - each command's exit statuses and what they mean: the "exit status:"
 *     rows of its --help, the man page's EXIT STATUS table;
 * and, inside the table, that every option of a synopsis has a row and every
 * row is in the synopsis; that every command answers --help and
 * `trialbox help COMMAND` with that text; and that the bash completion
 * offers the commands and only options that exist.
 *
 * The man page is read as the roff it is written in (the font macros .B,
 * .I, .BR, .RB, ... and the escapes \-, \fB, \&): no man or groff is run. */
#define _GNU_SOURCE
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/env.h"
#include "base/util.h"
#include "cmd/cli.h"
#include "cmd/help.h"
#include "tb_test.h"

#ifndef TRIALBOX_SOURCE_DIR
#error "TRIALBOX_SOURCE_DIR must be defined by the build"
#endif
#define MAN_PAGE TRIALBOX_SOURCE_DIR "/man/trialbox.1"
#define COMPLETION TRIALBOX_SOURCE_DIR "/completion/trialbox.bash"

#define MAX_COMMANDS 16

/* What one side (the man page, or --help) says. */
struct usage_text {
        struct strv commands;                  /* the commands' names, in SYNOPSIS order */
        struct strv sections;                  /* the names of COMMANDS' subsections (man page only) */
        char *synopsis[MAX_COMMANDS];          /* by index in cli_commands */
        char *last_synopsis;                   /* "trialbox --help | --version" */
        struct strv options[MAX_COMMANDS];     /* option headings: "--harness NAME", "-v, --verbose" */
        struct strv statuses[MAX_COMMANDS];    /* "STATUS: meaning", in order */
};

static void usage_text_done(struct usage_text *u)
{
        strv_done(&u->commands);
        strv_done(&u->sections);
        for (size_t i = 0; i < MAX_COMMANDS; i++) {
                free(u->synopsis[i]);
                strv_done(&u->options[i]);
                strv_done(&u->statuses[i]);
        }
        free(u->last_synopsis);
}

/* The index of the command `name` in cli_commands, or -1. */
static int command_index(const char *name)
{
        const struct cli_command *c = cli_command_find(name);
        return c ? (int)(c - cli_commands) : -1;
}

/* The first `n` bytes of `s`; malloc'd. */
static char *dup_n(const char *s, size_t n)
{
        char *d = xmalloc(n + 1);
        memcpy(d, s, n);
        d[n] = '\0';
        return d;
}

/* `s` with every run of blanks made one space, none at either end; malloc'd. */
static char *collapse(const char *s)
{
        char *out = xmalloc(strlen(s) + 1), *o = out;
        for (; *s; s++) {
                if (*s == ' ' || *s == '\t' || *s == '\n') {
                        if (o > out && o[-1] != ' ')
                                *o++ = ' ';
                        continue;
                }
                *o++ = *s;
        }
        while (o > out && o[-1] == ' ')
                o--;
        *o = '\0';
        return out;
}

/* ---- the man page, as roff ---- */

/* Text with roff's escapes resolved: \- is -, \e a backslash, \& and font
 * changes (\fB, \fI, \fR, \fP) nothing, \(aq a quote; \X any other X. */
static void unescape(struct strbuf *sb, const char *s, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                char one[2] = { s[i], '\0' };
                if (s[i] != '\\' || i + 1 == n) {
                        strbuf_add(sb, one);
                        continue;
                }
                char e = s[++i];
                if (e == 'f' && i + 1 < n)
                        i++;
                else if (e == '(' && i + 2 < n)
                        strbuf_add(sb, strncmp(s + i + 1, "aq", 2) == 0 ? "'" : "?"), i += 2;
                else if (e == 'e')
                        strbuf_add(sb, "\\");
                else if (e != '&')
                        strbuf_add(sb, (char[]){ e, '\0' });
        }
}

/* A line of roff as the text it prints: a font macro's arguments (a quoted
 * one whole) joined by spaces (.B, .I) or alternating fonts without any
 * (.BR, .RB, .BI, ...); any other line as it is. Malloc'd. */
static char *roff_text(const char *line)
{
        struct strbuf sb = { 0 };
        strbuf_add(&sb, "");
        size_t mlen = strcspn(line, " ");
        bool macro = line[0] == '.';
        bool alternating = macro && mlen == 3 && strchr("BIR", line[1]) && strchr("BIR", line[2]);
        if (!macro || !(alternating || (mlen == 2 && strchr("BI", line[1])))) {
                unescape(&sb, line, strlen(line));
                return sb.s;
        }
        const char *s = line + mlen;
        for (bool first = true;; first = false) {
                while (*s == ' ')
                        s++;
                if (!*s)
                        break;
                size_t n = *s == '"' ? strcspn(s + 1, "\"") : strcspn(s, " ");
                if (!first && !alternating)
                        strbuf_add(&sb, " ");
                unescape(&sb, *s == '"' ? s + 1 : s, n);
                s += n + (*s == '"' ? 1 + (s[n + 1] == '"') : 0);
        }
        return sb.s;
}

/* A SYNOPSIS line (lines up to .br): "trialbox NAME ..." or "trialbox --help ...". */
static void man_synopsis(struct usage_text *u, struct strbuf *group)
{
        if (!group->s || !group->s[0])
                return;
        _cleanup_free_ char *text = collapse(group->s);
        free(group->s);
        *group = (struct strbuf){ 0 };
        char name[64] = "";
        sscanf(text, "trialbox %63s", name);
        if (name[0] == '-') {
                free(u->last_synopsis);
                u->last_synopsis = steal_pointer(&text);
                return;
        }
        strv_add(&u->commands, name);
        int i = command_index(name);
        if (i >= 0 && !u->synopsis[i])
                u->synopsis[i] = steal_pointer(&text);
}

/* A row of EXIT STATUS's table: "command<TAB>status<TAB>meaning". */
static void man_status_row(struct usage_text *u, const char *row, char *last_command, size_t cap)
{
        _cleanup_free_ char *text = roff_text(row);
        char *tab1 = strchr(text, '\t'), *tab2 = tab1 ? strchr(tab1 + 1, '\t') : NULL;
        if (!tab2)
                return;
        *tab1 = *tab2 = '\0';
        if (text[0])
                snprintf(last_command, cap, "%s", text);
        int i = command_index(last_command);
        _cleanup_free_ char *status = collapse(tab1 + 1), *meaning = collapse(tab2 + 1);
        if (i >= 0)
                strv_addf(&u->statuses[i], "%s: %s", status, meaning);
        else
                strv_addf(&u->commands, "(EXIT STATUS: unknown command '%s')", last_command);
}

/* The EXIT STATUS table, from its first line after .TS: the format, the
 * header row, then the rows (a T{ ... T} cell over several lines). */
static void man_status_table(struct usage_text *u, char **lines, size_t *k)
{
        char last[64] = "";
        size_t row_no = 0;
        for (*k += 1; lines[*k] && strcmp(lines[*k], ".TE") != 0; (*k)++) {
                struct strbuf row = { 0 };
                strbuf_add(&row, lines[*k]);
                if (row.len >= 2 && strcmp(row.s + row.len - 2, "T{") == 0) {
                        row.s[row.len -= 2] = '\0';
                        while (lines[*k + 1] && strcmp(lines[*k + 1], "T}") != 0)
                                strbuf_addf(&row, " %s", lines[++*k]);
                        if (lines[*k + 1])
                                ++*k; /* the T} */
                }
                if (row_no++ >= 2) /* the format and the header row */
                        man_status_row(u, row.s, last, sizeof last);
                free(row.s);
        }
}

/* "OPTIONS" and "LIMITS" are run's; COMMANDS' subsections each a command's. */
static int man_options_owner(const char *section, const char *subsection)
{
        if (strcmp(section, "OPTIONS") == 0 || strcmp(section, "LIMITS") == 0)
                return command_index("run");
        if (strcmp(section, "COMMANDS") == 0)
                return command_index(subsection);
        return -1;
}

static void read_man_page(struct usage_text *u)
{
        _cleanup_free_ char *text = read_text(MAN_PAGE);
        _cleanup_strv_ struct strv lines = { 0 };
        for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
                strv_add(&lines, l);
        char section[64] = "", subsection[64] = "";
        struct strbuf group = { 0 };
        for (size_t k = 0; k < lines.n; k++) {
                const char *l = lines.v[k];
                bool in_synopsis = strcmp(section, "SYNOPSIS") == 0;
                if (str_has_prefix(l, ".SH ") || str_has_prefix(l, ".SS ")) {
                        if (in_synopsis)
                                man_synopsis(u, &group);
                        _cleanup_free_ char *name = roff_text(l + 4);
                        _cleanup_free_ char *bare = collapse(name[0] == '"' ? name + 1 : name);
                        bare[strcspn(bare, "\"")] = '\0';
                        snprintf(l[2] == 'H' ? section : subsection, sizeof section, "%s", bare);
                        if (l[2] == 'H')
                                subsection[0] = '\0';
                        else if (strcmp(section, "COMMANDS") == 0)
                                strv_add(&u->sections, bare);
                } else if (in_synopsis && strcmp(l, ".br") == 0) {
                        man_synopsis(u, &group);
                } else if (in_synopsis && !str_has_prefix(l, ".\\\"")) {
                        _cleanup_free_ char *t = roff_text(l);
                        strbuf_addf(&group, " %s", t);
                } else if (strcmp(l, ".TP") == 0 && k + 1 < lines.n && man_options_owner(section, subsection) >= 0) {
                        _cleanup_free_ char *t = roff_text(lines.v[++k]);
                        strv_add_take(&u->options[man_options_owner(section, subsection)], collapse(t));
                } else if (strcmp(l, ".TS") == 0 && strcmp(section, "EXIT STATUS") == 0) {
                        man_status_table(u, lines.v, &k);
                }
        }
        free(group.s);
}

/* ---- what --help prints ---- */

/* What `print` writes to a stream; malloc'd. */
static char *printed(void (*print)(const struct cli_command *, FILE *), const struct cli_command *c)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        ck_assert_ptr_nonnull(f);
        print(c, f);
        ck_assert_int_eq(fclose(f), 0);
        return buf;
}

static void print_all(const struct cli_command *c, FILE *f)
{
        (void)c;
        cli_print_usage(f);
}

/* A row "  HEAD  text": HEAD, up to two blanks or the line's end; malloc'd. */
static char *row_head(const char *line, const char **text)
{
        const char *s = line + 2, *end = strstr(s, "  ");
        size_t n = end ? (size_t)(end - s) : strlen(s);
        if (text) {
                *text = s + n;
                while (**text == ' ')
                        (*text)++;
        }
        return dup_n(s, n);
}

/* The synopses at the top of `text` (up to its first empty line): each
 * starts at "usage: " or at "trialbox" after 7 blanks; other lines go on the
 * one before. Collapsed, into `out`. */
static void help_synopses(const char *text, struct strv *out)
{
        struct strbuf one = { 0 };
        for (const char *l = text; *l && *l != '\n'; l += strcspn(l, "\n") + 1) {
                _cleanup_free_ char *line = dup_n(l, strcspn(l, "\n"));
                bool starts = str_has_prefix(line, "usage: ") || str_has_prefix(line, "       trialbox");
                if (starts && one.s) {
                        strv_add_take(out, collapse(one.s));
                        free(one.s);
                        one = (struct strbuf){ 0 };
                }
                strbuf_addf(&one, " %s", str_has_prefix(line, "usage: ") ? line + 7 : line);
        }
        if (one.s)
                strv_add_take(out, collapse(one.s));
        free(one.s);
}

/* A command's --help: its synopsis, option rows and exit status rows. */
static void read_help(struct usage_text *u, int i)
{
        _cleanup_free_ char *text = printed(cli_help_print, &cli_commands[i]);
        _cleanup_strv_ struct strv syn = { 0 };
        help_synopses(text, &syn);
        ck_assert_msg(syn.n == 1, "'%s --help' does not start with one synopsis:\n%s", cli_commands[i].name, text);
        u->synopsis[i] = xstrdup(syn.v[0]);
        bool statuses = false;
        for (const char *l = text; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != '\0')) {
                _cleanup_free_ char *line = dup_n(l, strcspn(l, "\n"));
                const char *rest;
                if (strcmp(line, "exit status:") == 0)
                        statuses = true;
                else if (statuses && str_has_prefix(line, "  ") && line[2] != ' ') {
                        _cleanup_free_ char *head = row_head(line, &rest);
                        strv_addf(&u->statuses[i], "%s: %s", head, rest);
                } else if (!statuses && str_has_prefix(line, "  -"))
                        strv_add_take(&u->options[i], row_head(line, NULL));
        }
}

static void read_all_help(struct usage_text *u)
{
        for (size_t i = 0; i < cli_n_commands; i++) {
                strv_add(&u->commands, cli_commands[i].name);
                read_help(u, (int)i);
        }
        _cleanup_free_ char *all = printed(print_all, NULL);
        _cleanup_strv_ struct strv syn = { 0 };
        help_synopses(all, &syn);
        ck_assert_msg(syn.n == cli_n_commands + 1, "'trialbox --help' has %zu synopses, not %zu:\n%s", syn.n,
                      cli_n_commands + 1, all);
        for (size_t i = 0; i < cli_n_commands; i++)
                ck_assert_msg(strcmp(syn.v[i], u->synopsis[i]) == 0,
                              "'trialbox --help' says\n  %s\nbut 'trialbox %s --help'\n  %s", syn.v[i],
                              cli_commands[i].name, u->synopsis[i]);
        u->last_synopsis = xstrdup(syn.v[cli_n_commands]);
}

/* ---- comparing ---- */

static void differ(struct strbuf *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void differ(struct strbuf *d, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *s = NULL;
        ck_assert_int_ge(vasprintf(&s, fmt, ap), 0);
        va_end(ap);
        strbuf_addf(d, "  %s\n", s);
}

static void assert_no_difference(struct strbuf *d, const char *what)
{
        ck_assert_msg(d->s == NULL, "%s: man/trialbox.1 and --help differ:\n%s", what, d->s);
}

/* Each of `a` not in `b`, and the reverse. */
static void compare_sets(struct strbuf *d, const char *cmd, const char *what, const struct strv *man,
                         const struct strv *help)
{
        for (size_t k = 0; k < man->n; k++)
                if (!strv_contains(help, man->v[k]))
                        differ(d, "%s: %s '%s' is in the man page, not in --help", cmd, what, man->v[k]);
        for (size_t k = 0; k < help->n; k++)
                if (!strv_contains(man, help->v[k]))
                        differ(d, "%s: %s '%s' is in --help, not in the man page", cmd, what, help->v[k]);
}

struct both {
        struct usage_text man, help;
};

static void both_read(struct both *b)
{
        *b = (struct both){ 0 };
        ck_assert_uint_le(cli_n_commands, MAX_COMMANDS);
        read_man_page(&b->man);
        read_all_help(&b->help);
}

static void both_done(struct both *b)
{
        usage_text_done(&b->man);
        usage_text_done(&b->help);
}

START_TEST(the_man_page_has_the_commands_of_the_table_in_its_order)
{
        struct both b;
        struct strbuf d = { 0 };
        both_read(&b);
        for (size_t i = 0; i < b.man.commands.n || i < cli_n_commands; i++) {
                const char *man = i < b.man.commands.n ? b.man.commands.v[i] : "(none)";
                const char *table = i < cli_n_commands ? cli_commands[i].name : "(none)";
                if (strcmp(man, table) != 0)
                        differ(&d, "SYNOPSIS line %zu is 'trialbox %s', the table's command %zu '%s'", i + 1, man,
                               i + 1, table);
                const char *sec = i < b.man.sections.n ? b.man.sections.v[i] : "(none)";
                if (strcmp(sec, table) != 0)
                        differ(&d, "COMMANDS' subsection %zu is '%s', the table's command %zu '%s'", i + 1, sec,
                               i + 1, table);
        }
        both_done(&b);
        assert_no_difference(&d, "the commands");
}
END_TEST

START_TEST(each_synopsis_in_help_is_the_man_pages_word_for_word)
{
        struct both b;
        struct strbuf d = { 0 };
        both_read(&b);
        for (size_t i = 0; i < cli_n_commands; i++) {
                const char *man = b.man.synopsis[i] ? b.man.synopsis[i] : "(none)";
                if (strcmp(man, b.help.synopsis[i]) != 0)
                        differ(&d, "%s:\n    man:    %s\n    --help: %s", cli_commands[i].name, man,
                               b.help.synopsis[i]);
        }
        const char *man_last = b.man.last_synopsis ? b.man.last_synopsis : "(none)";
        if (strcmp(man_last, b.help.last_synopsis) != 0)
                differ(&d, "the last line:\n    man:    %s\n    --help: %s", man_last, b.help.last_synopsis);
        both_done(&b);
        assert_no_difference(&d, "the synopses");
}
END_TEST

START_TEST(each_commands_options_in_help_are_the_man_pages)
{
        struct both b;
        struct strbuf d = { 0 };
        both_read(&b);
        for (size_t i = 0; i < cli_n_commands; i++)
                compare_sets(&d, cli_commands[i].name, "option", &b.man.options[i], &b.help.options[i]);
        both_done(&b);
        assert_no_difference(&d, "the options");
}
END_TEST

START_TEST(each_commands_exit_statuses_in_help_are_the_man_pages)
{
        struct both b;
        struct strbuf d = { 0 };
        both_read(&b);
        for (size_t i = 0; i < cli_n_commands; i++) {
                const struct strv *man = &b.man.statuses[i], *help = &b.help.statuses[i];
                for (size_t k = 0; k < man->n || k < help->n; k++) {
                        const char *m = k < man->n ? man->v[k] : "(none)", *h = k < help->n ? help->v[k] : "(none)";
                        if (strcmp(m, h) != 0)
                                differ(&d, "%s, status %zu:\n    man:    %s\n    --help: %s", cli_commands[i].name,
                                       k + 1, m, h);
                }
        }
        both_done(&b);
        assert_no_difference(&d, "the exit statuses");
}
END_TEST

/* The options a synopsis names: its words that start with '-' (brackets,
 * bars and dots taken off), "--" and "--help" aside. */
static void synopsis_options(const char *synopsis, struct strv *out)
{
        _cleanup_free_ char *s = xstrdup(synopsis);
        for (char *save = NULL, *w = strtok_r(s, " []|.", &save); w; w = strtok_r(NULL, " []|.", &save))
                if (w[0] == '-' && strcmp(w, "--") != 0 && strcmp(w, "--help") != 0 && strcmp(w, "--version") != 0)
                        strv_add(out, w);
}

START_TEST(every_option_of_a_synopsis_has_a_row_and_every_row_is_in_the_synopsis)
{
        struct strbuf d = { 0 };
        for (size_t i = 0; i < cli_n_commands; i++) {
                const struct cli_usage *u = cli_commands[i].usage;
                _cleanup_strv_ struct strv named = { 0 }, rows = { 0 };
                synopsis_options(u->synopsis, &named);
                for (size_t k = 0; k < u->n_options; k++) {
                        const struct cli_option *o = &u->options[k];
                        if (o->kind == CLI_HEADING || o->kind == CLI_HELP)
                                continue;
                        _cleanup_free_ char *lng = o->name ? xasprintf("--%s", o->name) : NULL;
                        _cleanup_free_ char *shrt = o->short_name ? xasprintf("-%c", o->short_name) : NULL;
                        if ((!lng || !strv_contains(&named, lng)) && (!shrt || !strv_contains(&named, shrt)))
                                differ(&d, "%s: option '%s' is not in the synopsis", cli_commands[i].name,
                                       lng ? lng : shrt ? shrt : "?");
                        if (lng)
                                strv_add(&rows, lng);
                        if (shrt)
                                strv_add(&rows, shrt);
                }
                for (size_t k = 0; k < named.n; k++)
                        if (!strv_contains(&rows, named.v[k]))
                                differ(&d, "%s: the synopsis names '%s', which is no option", cli_commands[i].name,
                                       named.v[k]);
        }
        ck_assert_msg(d.s == NULL, "the synopses and the option tables differ:\n%s", d.s);
}
END_TEST

/* Run `trialbox ARGS...` in this process (the test is its own fork) with
 * stdout in a file: its status, and what it printed (malloc'd). */
static int run_in_process(char **argv, int argc, char **out)
{
        char path[] = "/tmp/test_help.XXXXXX";
        int fd = mkstemp(path);
        ck_assert_int_ge(fd, 0);
        fflush(stdout);
        int saved = dup(1);
        ck_assert_int_ge(dup2(fd, 1), 0);
        int status = cli_main(argc, argv);
        fflush(stdout);
        ck_assert_int_ge(dup2(saved, 1), 0);
        close(saved);
        close(fd);
        *out = read_text(path);
        unlink(path);
        return status;
}

START_TEST(every_command_answers_help_and_trialbox_help_command)
{
        for (size_t i = 0; i < cli_n_commands; i++) {
                const char *name = cli_commands[i].name;
                _cleanup_free_ char *want = printed(cli_help_print, &cli_commands[i]);
                char *forms[][3] = { { "trialbox", (char *)name, "--help" },
                                     { "trialbox", (char *)name, "-h" },
                                     { "trialbox", "help", (char *)name } };
                for (size_t f = 0; f < TB_ARRAY_SIZE(forms); f++) {
                        _cleanup_free_ char *got = NULL;
                        int status = run_in_process(forms[f], 3, &got);
                        ck_assert_msg(status == 0, "'trialbox %s %s' exits %d", forms[f][1], forms[f][2], status);
                        ck_assert_msg(strcmp(got, want) == 0, "'trialbox %s %s' prints\n%s\nnot\n%s", forms[f][1],
                                      forms[f][2], got, want);
                }
        }
        _cleanup_free_ char *all = printed(print_all, NULL), *got = NULL, *got2 = NULL;
        ck_assert_int_eq(run_in_process((char *[]){ "trialbox", "--help" }, 2, &got), 0);
        ck_assert_str_eq(got, all);
        ck_assert_int_eq(run_in_process((char *[]){ "trialbox", "help" }, 2, &got2), 0);
        ck_assert_str_eq(got2, all);
}
END_TEST

/* ---- the bash completion ---- */

/* The words of the first `compgen ... -W "..."` at or after `from`. */
static void compgen_words(const char *from, struct strv *out)
{
        const char *w = strstr(from, "-W \"");
        ck_assert_ptr_nonnull(w);
        w += strlen("-W \"");
        _cleanup_free_ char *words = dup_n(w, strcspn(w, "\""));
        for (char *save = NULL, *t = strtok_r(words, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save))
                strv_add(out, t);
}

/* Does the command `c` have an option named `word` ("--json", "-v")? */
static bool is_option(const struct cli_command *c, const char *word)
{
        for (size_t k = 0; k < c->usage->n_options; k++) {
                const struct cli_option *o = &c->usage->options[k];
                if (o->kind == CLI_HEADING)
                        continue;
                if ((o->name && str_has_prefix(word, "--") && strcmp(word + 2, o->name) == 0) ||
                    (o->short_name && word[0] == '-' && word[1] == o->short_name && !word[2]))
                        return true;
        }
        return false;
}

static void check_completion_of(struct strbuf *d, const char *text, const struct cli_command *c)
{
        _cleanup_free_ char *label = xasprintf("\n        %s)", c->name);
        const char *at = strstr(strstr(text, "case \"$cmd\" in"), label);
        if (!at) {
                differ(d, "no completion for '%s'", c->name);
                return;
        }
        _cleanup_strv_ struct strv words = { 0 };
        compgen_words(at, &words);
        for (size_t k = 0; k < words.n; k++)
                if (words.v[k][0] == '-' && strcmp(words.v[k], "--") != 0 && !is_option(c, words.v[k]))
                        differ(d, "%s: the completion offers '%s', which is no option", c->name, words.v[k]);
        for (size_t k = 0; k < c->usage->n_options; k++) {
                const struct cli_option *o = &c->usage->options[k];
                _cleanup_free_ char *lng = o->name ? xasprintf("--%s", o->name) : NULL;
                _cleanup_free_ char *shrt = o->short_name ? xasprintf("-%c", o->short_name) : NULL;
                if (o->kind != CLI_HEADING && !(lng && strv_contains(&words, lng)) &&
                    !(shrt && strv_contains(&words, shrt)))
                        differ(d, "%s: the completion does not offer '%s'", c->name, lng ? lng : shrt ? shrt : "?");
        }
        if (strcmp(c->name, "help") == 0)
                for (size_t i = 0; i < cli_n_commands; i++)
                        if (!strv_contains(&words, cli_commands[i].name))
                                differ(d, "help: the completion does not offer '%s'", cli_commands[i].name);
}

START_TEST(the_bash_completion_offers_the_commands_and_only_options_that_exist)
{
        _cleanup_free_ char *text = read_text(COMPLETION);
        struct strbuf d = { 0 };
        _cleanup_strv_ struct strv first = { 0 };
        compgen_words(strstr(text, "COMP_CWORD\" -eq 1"), &first);
        for (size_t i = 0; i < cli_n_commands; i++)
                if (!strv_contains(&first, cli_commands[i].name))
                        differ(&d, "the completion does not offer the command '%s'", cli_commands[i].name);
        for (size_t k = 0; k < first.n; k++)
                if (!cli_command_find(first.v[k]) && strcmp(first.v[k], "--help") != 0 &&
                    strcmp(first.v[k], "--version") != 0)
                        differ(&d, "the completion offers '%s', which is no command", first.v[k]);
        ck_assert_ptr_nonnull(strstr(text, "case \"$cmd\" in"));
        for (size_t i = 0; i < cli_n_commands; i++)
                check_completion_of(&d, text, &cli_commands[i]);
        ck_assert_msg(d.s == NULL, "completion/trialbox.bash and the command table differ:\n%s", d.s);
}
END_TEST

TB_SUITE("help", 0)
{
        tcase_add_test(tc, the_man_page_has_the_commands_of_the_table_in_its_order);
        tcase_add_test(tc, each_synopsis_in_help_is_the_man_pages_word_for_word);
        tcase_add_test(tc, each_commands_options_in_help_are_the_man_pages);
        tcase_add_test(tc, each_commands_exit_statuses_in_help_are_the_man_pages);
        tcase_add_test(tc, every_option_of_a_synopsis_has_a_row_and_every_row_is_in_the_synopsis);
        tcase_add_test(tc, every_command_answers_help_and_trialbox_help_command);
        tcase_add_test(tc, the_bash_completion_offers_the_commands_and_only_options_that_exist);
}
