/* Bad input, case by case: every flag with a wrong value, repositories and
 * output folders that are wrong (or merely unusual: spaces, newlines,
 * non-ASCII, which must work), malformed Credentials, manifests and plugins,
 * a bad TRIALBOX_NO_SANDBOX, and `credentials` misused.
 *
 * What each refusal must look like (README, "Exit status"): exactly one line
 * on stderr saying what is wrong, the documented status (2 for a usage
 * error, 125 for a void Trial, 1 for `credentials` failing on its file), no
 * crash (no status of 128 or more from trialbox itself), and no partial
 * file: the output folder absent, or holding only what the README promises
 * (a void Trial: `outcome.json`, and `home` when it got that far).
 *
 * Each test runs a table of cases and checks every one of them; a failing
 * case is named on stderr with everything that was wrong with it, and the
 * test fails listing the names. */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tb_test.h"
#include "base/util.h"


/* ---- cases and verdicts ---- */

/* The cases of one test count themselves: each distinct case_end() is one. */
struct cases {
        const char *test; /* for the summary line */
        size_t total;
        int failed;
        struct strbuf names;
        char ended[256]; /* the last case ended: a case ended twice counts once */
        bool ended_failed; /* ... and fails once */
};

#define CASES_INIT { .test = __func__ }

struct verdict {
        struct strbuf why;
};

#define EXPECT(v, cond, ...)                                                                                           \
        do {                                                                                                           \
                if (!(cond)) {                                                                                         \
                        strbuf_add(&(v)->why, (v)->why.len ? "; " : "");                                               \
                        strbuf_addf(&(v)->why, __VA_ARGS__);                                                           \
                }                                                                                                      \
        } while (0)

static void case_end(struct cases *cs, const char *name, struct verdict *v)
{
        bool again = cs->total > 0 && strncmp(cs->ended, name, sizeof cs->ended - 1) == 0;
        if (!again) {
                cs->total++;
                snprintf(cs->ended, sizeof cs->ended, "%s", name);
                cs->ended_failed = false;
        }
        if (v->why.len) {
                fprintf(stderr, "FAILED case '%s': %s\n", name, v->why.s);
                if (!cs->ended_failed) {
                        strbuf_addf(&cs->names, "%s'%s'", cs->failed ? ", " : "", name);
                        cs->failed++;
                        cs->ended_failed = true;
                }
        }
        free(v->why.s);
        v->why = (struct strbuf){ 0 };
}

static void cases_done(struct cases *cs)
{
        size_t total = cs->total;
        size_t n = strlen(cs->test);
        if (n > 3 && strcmp(cs->test + n - 3, "_fn") == 0) /* Check's name for the test's function */
                n -= 3;
        printf("%.*s: %zu cases, %d failed\n", (int)n, cs->test, total, cs->failed);
        fflush(stdout);
        ck_assert_msg(cs->failed == 0, "%d of %zu cases failed (details on stderr): %s", cs->failed, total,
                      cs->names.s);
        free(cs->names.s);
}

/* `s` with newlines and other control characters shown as escapes; one of a
 * few rotating static buffers. */
static const char *esc(const char *s)
{
        static char bufs[4][2048];
        static int next;
        char *b = bufs[next++ % 4];
        size_t n = 0;
        for (; s && *s && n + 5 < sizeof bufs[0]; s++) {
                unsigned char c = (unsigned char)*s;
                if (c == '\n')
                        n += (size_t)snprintf(b + n, 3, "\\n");
                else if (c < 0x20 || c == 0x7f)
                        n += (size_t)snprintf(b + n, 5, "\\x%02x", c);
                else
                        b[n++] = (char)c;
        }
        b[n] = '\0';
        return b;
}


/* What every refusal looks like: status, one line on stderr that says it. */
static void expect_refusal(struct verdict *v, const struct proc_result *r, int status, const char *says)
{
        EXPECT(v, r->status < 128, "trialbox died of signal %d (a crash)", r->status - 128);
        EXPECT(v, r->status == status, "status %d, not %d", r->status, status);
        EXPECT(v, one_line(r->err), "stderr is not exactly one line: \"%s\"", esc(r->err));
        EXPECT(v, str_has_prefix(r->err, "trialbox: "), "stderr does not start with 'trialbox: ': \"%s\"", esc(r->err));
        EXPECT(v, !says || strstr(r->err, says), "stderr lacks \"%s\": \"%s\"", esc(says), esc(r->err));
        bool raw = false;
        for (const char *p = r->err; *p && p[1]; p++)
                raw = raw || (unsigned char)*p < 0x20 || *p == 0x7f;
        EXPECT(v, !raw, "stderr holds a raw control character: \"%s\"", esc(r->err));
}

/* The output folder holds only what a void Trial leaves: outcome.json, and
 * the fresh home (with nothing but its empty XDG folders) when it got that far. */
static void expect_void_output(struct verdict *v, const char *out)
{
        _cleanup_free_ char *top = listing(out);
        EXPECT(v, strcmp(top, "home outcome.json") == 0 || strcmp(top, "outcome.json") == 0,
               "the output folder holds \"%s\"", top);
        _cleanup_free_ char *find = xasprintf("[ -z \"$(find '%s' -type f ! -name outcome.json)\" ]", out);
        EXPECT(v, host_can(find), "the output folder holds files besides outcome.json");
}

/* A usage error: the status, one line, nothing on stdout, and no output folder. */
static void usage_case(struct cases *cs, const char *name, const char *out, char *const env[], const char *const args[],
                       int status, const char *says)
{
        struct proc_result r;
        struct verdict v = { 0 };
        tb_command(&r, env, args);
        expect_refusal(&v, &r, status, says);
        EXPECT(&v, r.out[0] == '\0', "stdout is not empty: \"%s\"", esc(r.out));
        if (out && exists(out)) {
                _cleanup_free_ char *l = listing(out);
                EXPECT(&v, false, "the output folder was made (holding \"%s\")", l);
                tmpdir_remove(out);
        }
        case_end(cs, name, &v);
        proc_result_free(&r);
}

#define ARGS(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* ---- flags ---- */

START_TEST(bad_flags_are_usage_errors_with_one_line_and_no_output_folder)
{
        struct fixture f;
        struct cases cs = CASES_INIT;
        fixture_new(&f);
        const char *R = f.repo, *O = f.out;
        _cleanup_free_ char *file = xasprintf("%s/a-file", f.dir);
        write_text(file, "not a folder\n", 0644);
        char long_name[70];
        memset(long_name, 'a', sizeof long_name - 1);
        long_name[sizeof long_name - 1] = '\0';

        /* Each option that takes a value: with an empty value, and given twice. */
        const struct {
                const char *opt, *value;
        } valued[] = { { "--harness", "shell" },       { "--repo", R },   { "--output-dir", O },
                       { "--harness-bin", "/bin/sh" }, { "--skills", R }, { "--credentials", file } };
        for (size_t i = 0; i < TB_ARRAY_SIZE(valued); i++) {
                const char *args[24];
                size_t n = 0;
                char name[128];
                /* run --harness shell --repo R --output-dir O, with this option's value emptied
                 * (or the option added with an empty value). */
                bool seen = false;
                args[n++] = "run";
                for (size_t k = 0; k < 3; k++) {
                        bool match = strcmp(valued[k].opt, valued[i].opt) == 0;
                        seen = seen || match;
                        args[n++] = valued[k].opt;
                        args[n++] = match ? "" : valued[k].value;
                }
                if (!seen) {
                        args[n++] = valued[i].opt;
                        args[n++] = "";
                }
                args[n] = NULL;
                snprintf(name, sizeof name, "%s with an empty value", valued[i].opt);
                usage_case(&cs, name, O, NULL, args, 2, "needs a non-empty value");

                /* The same three, then this option once more (twice when it is not among them). */
                n = 1;
                for (size_t k = 0; k < 3; k++) {
                        args[n++] = valued[k].opt;
                        args[n++] = valued[k].value;
                }
                for (size_t times = seen ? 1 : 2; times > 0; times--) {
                        args[n++] = valued[i].opt;
                        args[n++] = valued[i].value;
                }
                args[n] = NULL;
                snprintf(name, sizeof name, "%s given twice", valued[i].opt);
                usage_case(&cs, name, O, NULL, args, 2, "given twice");
        }

        struct {
                const char *name;
                const char *const *args;
                const char *says;
        } cases[] = {
                { "an unknown long option",
                  ARGS("run", "--harness", "shell", "--repo", R, "--output-dir", O, "--bogus"),
                  "unknown option '--bogus'" },
                { "an unknown short option", ARGS("run", "--harness", "shell", "--repo", R, "--output-dir", O, "-x"),
                  "unknown option '-x'" },
                { "a value given to --json",
                  ARGS("run", "--harness", "shell", "--repo", R, "--output-dir", O, "--json=1"), "'--json=1'" },
                { "a value given to --no-sandbox",
                  ARGS("run", "--harness", "shell", "--repo", R, "--output-dir", O, "--no-sandbox=yes"),
                  "'--no-sandbox=yes'" },
                { "a value given to --dry-run",
                  ARGS("run", "--harness", "shell", "--repo", R, "--output-dir", O, "--dry-run=no"), "'--dry-run=no'" },
                { "a stray argument before --",
                  ARGS("run", "--harness", "shell", "--repo", R, "--output-dir", O, "stray"),
                  "session arguments go after '--'" },
                { "-v with -q", ARGS("run", "--harness", "shell", "--repo", R, "--output-dir", O, "-v", "-q"),
                  "-v and -q" },
                { "-vq", ARGS("run", "--harness", "shell", "--repo", R, "--output-dir", O, "-vq"), "-v and -q" },
                { "--verbose with --quiet",
                  ARGS("run", "--harness", "shell", "--repo", R, "--output-dir", O, "--verbose", "--quiet"),
                  "-v and -q" },
                { "-q with -vv", ARGS("run", "--harness", "shell", "--repo", R, "--output-dir", O, "-q", "-vv"),
                  "-v and -q" },
                { "no --harness", ARGS("run", "--repo", R, "--output-dir", O), "--harness is required" },
                { "no --repo", ARGS("run", "--harness", "shell", "--output-dir", O), "--repo is required" },
                { "no --output-dir", ARGS("run", "--harness", "shell", "--repo", R), "--output-dir is required" },
                { "run with nothing", ARGS("run"), "--harness is required" },
                { "harness '../x'", ARGS("run", "--harness", "../x", "--repo", R, "--output-dir", O),
                  "'../x' is not a harness name" },
                { "harness 'Codex'", ARGS("run", "--harness", "Codex", "--repo", R, "--output-dir", O),
                  "'Codex' is not a harness name" },
                { "harness 'a b'", ARGS("run", "--harness", "a b", "--repo", R, "--output-dir", O),
                  "'a b' is not a harness name" },
                { "harness 'x/y'", ARGS("run", "--harness", "x/y", "--repo", R, "--output-dir", O),
                  "'x/y' is not a harness name" },
                { "harness '.hidden'", ARGS("run", "--harness", ".hidden", "--repo", R, "--output-dir", O),
                  "'.hidden' is not a harness name" },
                { "harness 'shell.so'", ARGS("run", "--harness", "shell.so", "--repo", R, "--output-dir", O),
                  "'shell.so' is not a harness name" },
                { "harness '-x'", ARGS("run", "--harness", "-x", "--repo", R, "--output-dir", O),
                  "'-x' is not a harness name" },
                { "a harness name of 69 letters", ARGS("run", "--harness", long_name, "--repo", R, "--output-dir", O),
                  "is not a harness name" },
                { "a harness that is not installed", ARGS("run", "--harness", "nosuch", "--repo", R, "--output-dir", O),
                  "no plugin for harness 'nosuch'" },
                { "--skills that does not exist",
                  ARGS("run", "--harness", "shell", "--repo", R, "--output-dir", O, "--skills", "/nonexistent-skills"),
                  "skills folder '/nonexistent-skills' is not a folder" },
                { "--skills that is a file",
                  ARGS("run", "--harness", "shell", "--repo", R, "--output-dir", O, "--skills", file),
                  "is not a folder" },
                { "an unknown command", ARGS("frobnicate"), "unknown command 'frobnicate'" },
                { "an empty command", ARGS(""), "unknown command ''" },
                { "an option for a command", ARGS("--bogus"), "unknown command '--bogus'" },
                { "harnesses --harness", ARGS("harnesses", "--harness", "shell"), "unknown option '--harness'" },
                { "harnesses with an argument", ARGS("harnesses", "extra"), "unexpected argument 'extra'" },
                { "harnesses --json=1", ARGS("harnesses", "--json=1"), "'--json=1'" },
                { "check -v -q", ARGS("check", "-v", "-q"), "-v and -q" },
                { "check --bogus", ARGS("check", "--bogus"), "unknown option '--bogus'" },
                { "check with an argument", ARGS("check", "extra"), "unexpected argument 'extra'" },
        };
        for (size_t i = 0; i < TB_ARRAY_SIZE(cases); i++)
                usage_case(&cs, cases[i].name, O, NULL, cases[i].args, 2, cases[i].says);

        /* No arguments at all: the usage text, on stderr, status 2. */
        struct proc_result r;
        struct verdict v = { 0 };
        tb_command(&r, NULL, (const char *const[]){ NULL });
        EXPECT(&v, r.status == 2, "status %d, not 2", r.status);
        EXPECT(&v, str_has_prefix(r.err, "usage: trialbox run"), "stderr is not the usage: \"%s\"", esc(r.err));
        case_end(&cs, "no arguments", &v);
        proc_result_free(&r);

        fixture_free(&f);
        cases_done(&cs);
}
END_TEST

/* getopt_long reports a missing value as '?' unless its option string starts
 * with ':' (cli.c passes "+vqh"), so the `case ':'` in cli_parse_run() and
 * cmd_simple() is never reached and a known option is called unknown. */
START_TEST(a_missing_value_is_reported_as_missing_not_as_an_unknown_option)
{
        struct fixture f;
        struct cases cs = CASES_INIT;
        fixture_new(&f);
        const char *R = f.repo, *O = f.out;
        const struct {
                const char *opt, *value;
        } valued[] = { { "--harness", "shell" },       { "--repo", R },   { "--output-dir", O },
                       { "--harness-bin", "/bin/sh" }, { "--skills", R }, { "--credentials", "/tmp/x.json" } };
        for (size_t i = 0; i < TB_ARRAY_SIZE(valued); i++) {
                /* The three required options but this one, then this one last, with no value. */
                const char *args[16];
                size_t n = 0;
                args[n++] = "run";
                for (size_t k = 0; k < 3; k++) {
                        if (k != i) {
                                args[n++] = valued[k].opt;
                                args[n++] = valued[k].value;
                        }
                }
                args[n++] = valued[i].opt;
                args[n] = NULL;
                char name[128], says[128];
                snprintf(name, sizeof name, "%s without a value, last", valued[i].opt);
                snprintf(says, sizeof says, "option '%s' needs a value", valued[i].opt);
                usage_case(&cs, name, O, NULL, args, 2, says);
        }
        usage_case(&cs, "check --harness without a value", NULL, NULL, ARGS("check", "--harness"), 2,
                   "option '--harness' needs a value");
        fixture_free(&f);
        cases_done(&cs);
}
END_TEST

/* cli.c names the option from argv[optind - 1]: for "--harness a --harness b"
 * that is the value "b", and for "--output-dir=" (empty, attached) the
 * "optind - 1 - 1" it uses for the empty-value message is the argument
 * before it. */
START_TEST(a_repeated_or_empty_option_is_named_in_the_message)
{
        struct fixture f;
        struct cases cs = CASES_INIT;
        fixture_new(&f);
        const char *R = f.repo, *O = f.out;
        usage_case(&cs, "--harness given twice, values apart", O, NULL,
                   ARGS("run", "--harness", "shell", "--repo", R, "--output-dir", O, "--harness", "shell"), 2,
                   "option '--harness' given twice");
        usage_case(&cs, "--credentials given twice, values apart", O, NULL,
                   ARGS("run", "--harness", "shell", "--repo", R, "--output-dir", O, "--credentials", "/tmp/a.json",
                        "--credentials", "/tmp/b.json"),
                   2, "option '--credentials' given twice");
        usage_case(&cs, "--output-dir= (empty, attached)", O, NULL,
                   ARGS("run", "--harness", "shell", "--repo", R, "--output-dir="), 2,
                   "option '--output-dir' needs a non-empty value");
        usage_case(&cs, "--harness= (empty, attached)", O, NULL,
                   ARGS("run", "--repo", R, "--output-dir", O, "--harness="), 2,
                   "option '--harness' needs a non-empty value");
        fixture_free(&f);
        cases_done(&cs);
}
END_TEST

/* Names and paths are quoted into messages as they are: a newline in one
 * splits the "one line" on stderr (and an escape sequence would reach the
 * terminal). trial.c, manifest.c and credentials.c quote with '%s'. */
START_TEST(control_characters_in_names_and_paths_are_not_echoed_raw)
{
        struct fixture f;
        struct cases cs = CASES_INIT;
        fixture_new(&f);
        const char *R = f.repo, *O = f.out;
        usage_case(&cs, "a harness name with a newline", O, NULL,
                   ARGS("run", "--harness", "a\nb", "--repo", R, "--output-dir", O), 2, "is not a harness name");
        usage_case(&cs, "a missing repository with a newline", O, NULL,
                   ARGS("run", "--harness", "shell", "--repo", "/nonexistent\nrepo", "--output-dir", O), 2,
                   "No such file or directory");
        usage_case(&cs, "a harness name with an escape sequence", O, NULL,
                   ARGS("run", "--harness", "a\033[2Jb", "--repo", R, "--output-dir", O), 2, "is not a harness name");

        /* A manifest's unknown field with a newline in its name. */
        _cleanup_free_ char *dir = xasprintf("%s/plugins", f.dir);
        ck_assert_int_eq(mkdir(dir, 0755), 0);
        _cleanup_free_ char *mf = xasprintf("%s/nl.json", dir);
        write_text(mf, "{\"name\": \"nl\", \"default_binary\": \"/bin/sh\", \"co\\nlour\": 1}", 0644);
        _cleanup_free_ char *env = xasprintf("TRIALBOX_PLUGIN_PATH=%s", dir);
        usage_case(&cs, "a manifest field name with a newline", O, ENV(env),
                   ARGS("run", "--harness", "nl", "--repo", R, "--output-dir", O), 2, "is not a manifest field");
        fixture_free(&f);
        cases_done(&cs);
}
END_TEST

/* `VAR=value` refused by the command `args` with status 2 and the line
 * "VAR is …", its output folder `out` never made, the session (which
 * touches `ran`) never run. The case is named "PREFIXVAR='value'". */
static void env_value_refused(struct cases *cs, const char *prefix, const char *var, const char *value, const char *out,
                              const char *ran, const char *const args[])
{
        char name[128], env[128], says[64];
        snprintf(name, sizeof name, "%s%s='%s'", prefix, var, value);
        snprintf(env, sizeof env, "%s=%s", var, value);
        snprintf(says, sizeof says, "%s is", var);
        usage_case(cs, name, out, ENV(env), args, 2, says);
        if (exists(ran)) {
                struct verdict v = { 0 };
                EXPECT(&v, false, "the session ran");
                case_end(cs, name, &v);
                unlink(ran);
        }
}

/* `VAR=value` taken by `run`: its Trial (touch RAN) exits 0 and runs; with
 * `sandboxed`, outcome.json's field says so. The case is named
 * "VAR='value' (works)"; RAN and the output folder are removed after. */
static void env_value_works(struct cases *cs, struct fixture *f, const char *var, const char *value,
                            const char *sandboxed)
{
        char name[128], env[128];
        snprintf(name, sizeof name, "%s='%s' (works)", var, value);
        snprintf(env, sizeof env, "%s=%s", var, value);
        _cleanup_free_ char *ran = xasprintf("%s/RAN", f->repo);
        struct proc_result r;
        struct verdict v = { 0 };
        tb_command(
                &r, ENV(env),
                ARGS("run", "--harness", "shell", "--repo", f->repo, "--output-dir", f->out, "--", "-c", "touch RAN"));
        EXPECT(&v, r.status == 0, "status %d: %s", r.status, esc(r.err));
        EXPECT(&v, exists(ran), "the session did not run");
        if (sandboxed) {
                _cleanup_free_ char *sb = outcome_field(f->out, "sandboxed");
                EXPECT(&v, sb && strcmp(sb, sandboxed) == 0, "sandboxed is %s, not %s", sb ? sb : "(none)", sandboxed);
        }
        case_end(cs, name, &v);
        proc_result_free(&r);
        unlink(ran);
        tmpdir_remove(f->out);
}

START_TEST(trialbox_no_sandbox_with_a_bad_value_is_a_usage_error)
{
        struct fixture f;
        struct cases cs = CASES_INIT;
        fixture_new(&f);
        _cleanup_free_ char *ran = xasprintf("%s/RAN", f.repo);
        static const char *const bad[] = { "yes", "true", "2", "on", " 1", "1 ", "-1", "01", "no" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(bad); i++)
                env_value_refused(&cs, "", "TRIALBOX_NO_SANDBOX", bad[i], f.out, ran,
                                  ARGS("run", "--harness", "shell", "--repo", f.repo, "--output-dir", f.out, "--", "-c",
                                       "touch RAN"));
        /* The good values work: 0 and empty are sandboxed, 1 is not. */
        static const char *const good[][2] = { { "0", "true" }, { "", "true" }, { "1", "false" } };
        for (size_t i = 0; i < TB_ARRAY_SIZE(good); i++)
                env_value_works(&cs, &f, "TRIALBOX_NO_SANDBOX", good[i][0], good[i][1]);
        fixture_free(&f);
        cases_done(&cs);
}
END_TEST

/* TRIALBOX_CPUS_BUSY (1: every CPU busy, no helper thread on another unless
 * one is idle; 0, empty or unset: not): any other value is one line and
 * status 2 from the commands that read it, with nothing run; the good ones
 * run the Trial. */
START_TEST(trialbox_cpus_busy_with_a_bad_value_is_a_usage_error)
{
        struct fixture f;
        struct cases cs = CASES_INIT;
        fixture_new(&f);
        _cleanup_free_ char *ran = xasprintf("%s/RAN", f.repo);
        _cleanup_free_ char *plan = xasprintf("%s/plan.jsonl", f.dir);
        write_text(plan, "{\"id\":\"t\",\"harness\":\"shell\",\"repo\":\"repo\",\"output_dir\":\"bout\"}\n", 0644);
        _cleanup_free_ char *bout = xasprintf("%s/bout", f.dir);
        static const char *const bad[] = { "yes", "2", " 1", "01", "true" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(bad); i++) {
                env_value_refused(&cs, "run, ", "TRIALBOX_CPUS_BUSY", bad[i], f.out, ran,
                                  ARGS("run", "--harness", "shell", "--repo", f.repo, "--output-dir", f.out, "--", "-c",
                                       "touch RAN"));
                env_value_refused(&cs, "batch, ", "TRIALBOX_CPUS_BUSY", bad[i], bout, ran, ARGS("batch", plan));
        }
        static const char *const good[] = { "0", "", "1" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(good); i++)
                env_value_works(&cs, &f, "TRIALBOX_CPUS_BUSY", good[i], NULL);
        fixture_free(&f);
        cases_done(&cs);
}
END_TEST

/* ---- repositories ---- */

START_TEST(a_repository_that_is_missing_or_not_a_folder_is_a_usage_error)
{
        struct fixture f;
        struct cases cs = CASES_INIT;
        fixture_new(&f);
        _cleanup_free_ char *file = xasprintf("%s/a-file", f.dir);
        _cleanup_free_ char *file_link = xasprintf("%s/link-to-file", f.dir);
        _cleanup_free_ char *dangling = xasprintf("%s/dangling", f.dir);
        _cleanup_free_ char *fifo = xasprintf("%s/fifo", f.dir);
        write_text(file, "x\n", 0644);
        ck_assert_int_eq(symlink(file, file_link), 0);
        ck_assert_int_eq(symlink("/nonexistent-target", dangling), 0);
        ck_assert_int_eq(mkfifo(fifo, 0644), 0);
        struct {
                const char *name, *repo, *says;
        } cases[] = {
                { "a repository that does not exist", "/nonexistent-repo",
                  "repository '/nonexistent-repo': No such file" },
                { "a repository that is a file", file, "is not a folder" },
                { "a repository that is a link to a file", file_link, "is not a folder" },
                { "a repository that is a dangling link", dangling, "No such file or directory" },
                { "a repository that is a fifo", fifo, "is not a folder" },
        };
        for (size_t i = 0; i < TB_ARRAY_SIZE(cases); i++)
                usage_case(&cs, cases[i].name, f.out, NULL,
                           ARGS("run", "--harness", "shell", "--repo", cases[i].repo, "--output-dir", f.out), 2,
                           cases[i].says);
        fixture_free(&f);
        cases_done(&cs);
}
END_TEST

START_TEST(a_repository_with_spaces_newlines_or_non_ascii_in_its_path_works)
{
        struct fixture f;
        struct cases cs = CASES_INIT;
        fixture_new(&f);
        static const char *const names[] = { "repo with spaces", "repo\nwith\na newline", "dépôt-日本語-ü",
                                             "'quoted' \"repo\" $HOME `x`" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(names); i++) {
                struct fixture g = f;
                snprintf(g.repo, sizeof g.repo, "%s/%s", f.dir, names[i]);
                snprintf(g.out, sizeof g.out, "%s/out-%zu", f.dir, i);
                ck_assert_int_eq(mkdir(g.repo, 0755), 0);
                struct proc_result r;
                struct verdict v = { 0 };
                tb_run(&r, "shell", &g, NULL, EXTRA("--", "-c", "pwd; echo made > made-here"));
                _cleanup_free_ char *want = xasprintf("%s\n", g.repo);
                _cleanup_free_ char *made = xasprintf("%s/made-here", g.repo);
                EXPECT(&v, r.status == 0, "status %d: %s", r.status, esc(r.err));
                EXPECT(&v, strcmp(r.out, want) == 0, "the session ran in \"%s\", not \"%s\"", esc(r.out), esc(want));
                EXPECT(&v, exists(made), "the session's file is not in the repository");
                _cleanup_free_ char *o = outcome_field(g.out, "outcome");
                EXPECT(&v, o && strcmp(o, "completed") == 0, "outcome %s", o ? o : "(none)");
                EXPECT(&v, one_line(r.err), "stderr is not one line: \"%s\"", esc(r.err));
                case_end(&cs, esc(names[i]), &v);
                proc_result_free(&r);
        }
        fixture_free(&f);
        cases_done(&cs);
}
END_TEST

/* ---- output folders ---- */

START_TEST(an_output_folder_that_is_a_link_inside_the_repository_or_used_is_refused)
{
        struct fixture f;
        struct cases cs = CASES_INIT;
        fixture_new(&f);
        const char *R = f.repo;
        _cleanup_free_ char *empty_dir = xasprintf("%s/empty-dir", f.dir);
        _cleanup_free_ char *link_dangling = xasprintf("%s/link-dangling", f.dir);
        _cleanup_free_ char *link_dir = xasprintf("%s/link-dir", f.dir);
        _cleanup_free_ char *link_in_repo = xasprintf("%s/link-in-repo", f.dir);
        _cleanup_free_ char *dangling_target = xasprintf("%s/not-made", f.dir);
        _cleanup_free_ char *in_repo = xasprintf("%s/out", R);
        _cleanup_free_ char *deep_in_repo = xasprintf("%s/a/b/out", R);
        _cleanup_free_ char *deep_first = xasprintf("%s/a", R);
        _cleanup_free_ char *existing_in_repo = xasprintf("%s/existing", R);
        _cleanup_free_ char *a_file = xasprintf("%s/a-file", f.dir);
        _cleanup_free_ char *used = xasprintf("%s/used", f.dir);
        _cleanup_free_ char *used_outcome = xasprintf("%s/outcome.json", used);
        _cleanup_free_ char *used_home = xasprintf("%s/used-home", f.dir);
        _cleanup_free_ char *used_home_home = xasprintf("%s/home", used_home);
        ck_assert_int_eq(mkdir(empty_dir, 0755), 0);
        ck_assert_int_eq(mkdir(existing_in_repo, 0755), 0);
        ck_assert_int_eq(symlink(dangling_target, link_dangling), 0);
        ck_assert_int_eq(symlink(empty_dir, link_dir), 0);
        ck_assert_int_eq(symlink(existing_in_repo, link_in_repo), 0);
        write_text(a_file, "x\n", 0644);
        ck_assert_int_eq(mkdir(used, 0755), 0);
        write_text(used_outcome, "{\"outcome\":\"completed\"}\n", 0644);
        ck_assert_int_eq(mkdir(used_home, 0755), 0);
        ck_assert_int_eq(mkdir(used_home_home, 0700), 0);
        struct {
                const char *name, *out, *says;
        } cases[] = {
                { "a link to nothing", link_dangling, "is a symbolic link" },
                { "a link to an empty folder", link_dir, "is a symbolic link" },
                { "a link to a folder in the repository", link_in_repo, "is a symbolic link" },
                { "the repository itself", R, "is inside the repository" },
                { "a new folder in the repository", in_repo, "is inside the repository" },
                { "a new folder deep in the repository", deep_in_repo, "is inside the repository" },
                { "an existing folder in the repository", existing_in_repo, "is inside the repository" },
                { "a file", a_file, "is not a folder" },
                { "a folder holding an outcome.json", used, "already holds a Trial" },
                { "a folder holding a home", used_home, "already holds a Trial" },
        };
        _cleanup_free_ char *ran = xasprintf("%s/RAN", R);
        for (size_t i = 0; i < TB_ARRAY_SIZE(cases); i++) {
                usage_case(&cs, cases[i].name, NULL, NULL,
                           ARGS("run", "--harness", "shell", "--repo", R, "--output-dir", cases[i].out, "--", "-c",
                                "touch RAN"),
                           2, cases[i].says);
                struct verdict v = { 0 };
                EXPECT(&v, !exists(ran), "the session ran");
                EXPECT(&v, !exists(dangling_target), "the link's target was made");
                EXPECT(&v, !exists(in_repo) && !exists(deep_first), "a folder was made in the repository");
                _cleanup_free_ char *l1 = listing(empty_dir), *l2 = listing(existing_in_repo), *l3 = listing(used),
                                    *l4 = listing(used_home);
                EXPECT(&v, !l1[0] && !l2[0], "a linked folder was written: \"%s\" \"%s\"", l1, l2);
                EXPECT(&v, strcmp(l3, "outcome.json") == 0 && strcmp(l4, "home") == 0,
                       "a used folder was written: \"%s\" \"%s\"", l3, l4);
                _cleanup_free_ char *o = read_text(used_outcome);
                EXPECT(&v, o && strcmp(o, "{\"outcome\":\"completed\"}\n") == 0, "a used outcome.json was rewritten");
                case_end(&cs, cases[i].name, &v);
                unlink(ran);
        }
        fixture_free(&f);
        cases_done(&cs);
}
END_TEST

/* trial.c's absolute() resolves an output folder that does not exist yet
 * only textually (no realpath of its parent), and path_is_under() compares
 * text: a parent that is a link into the repository, or a '..', slips the
 * "inside the repository" check, and the fresh home is made in the
 * repository, where the session can read it. */
START_TEST(an_output_folder_reaching_into_the_repository_by_a_link_or_dotdot_is_refused)
{
        struct fixture f;
        struct cases cs = CASES_INIT;
        fixture_new(&f);
        _cleanup_free_ char *repo_link = xasprintf("%s/repo-link", f.dir);
        _cleanup_free_ char *other = xasprintf("%s/other", f.dir);
        ck_assert_int_eq(symlink(f.repo, repo_link), 0);
        ck_assert_int_eq(mkdir(other, 0755), 0);
        _cleanup_free_ char *via_link = xasprintf("%s/out", repo_link);
        _cleanup_free_ char *via_dotdot = xasprintf("%s/../repo/out", other);
        _cleanup_free_ char *landed = xasprintf("%s/out", f.repo);
        struct {
                const char *name, *out;
        } cases[] = {
                { "a new folder under a link to the repository", via_link },
                { "a new folder reached by '..' into the repository", via_dotdot },
        };
        for (size_t i = 0; i < TB_ARRAY_SIZE(cases); i++) {
                usage_case(&cs, cases[i].name, NULL, NULL,
                           ARGS("run", "--harness", "shell", "--repo", f.repo, "--output-dir", cases[i].out, "--", "-c",
                                "true"),
                           2, "is inside the repository");
                if (exists(landed)) {
                        struct verdict v = { 0 };
                        _cleanup_free_ char *l = listing(landed);
                        EXPECT(&v, false, "the output folder was made in the repository, holding \"%s\"", l);
                        case_end(&cs, cases[i].name, &v);
                        tmpdir_remove(landed);
                }
        }
        fixture_free(&f);
        cases_done(&cs);
}
END_TEST

/* ---- Credentials ---- */

enum creds_kind { CREDS_TEXT, CREDS_FOLDER, CREDS_LINK, CREDS_HUGE };

struct bad_credentials {
        const char *name;
        const char *text; /* for CREDS_TEXT */
        const char *says;
        enum creds_kind kind;
};

/* Every malformed Credentials file: texts, then a folder, a link, a file over 1 MiB. */
static const struct bad_credentials bad_creds[] = {
        { "truncated JSON", "{\"claude\": {\"setup_token\": \"sk-tbtest-secret-1\"", "invalid JSON at line 1, column", CREDS_TEXT },
        { "not JSON", "setup_token = sk-tbtest-secret-2\n", "invalid JSON at line 1, column", CREDS_TEXT },
        { "a trailing comma on line 4", "{\n  \"claude\": {\n    \"setup_token\": \"sk-tbtest-secret-3\",\n  }\n}\n",
          "invalid JSON at line 4", CREDS_TEXT },
        { "text after the object", "{\"claude\": {\"setup_token\": \"sk-tbtest-secret-4\"}} {}", "invalid JSON", CREDS_TEXT },
        { "an empty file", "", "invalid JSON", CREDS_TEXT },
        { "a top level that is an array", "[\"sk-tbtest-secret-6\"]", "top level must be a JSON object", CREDS_TEXT },
        { "a section that is a string", "{\"claude\": \"sk-tbtest-secret-7\"}", "'claude' must be an object", CREDS_TEXT },
        { "a section that is null", "{\"claude\": null}", "'claude' must be an object", CREDS_TEXT },
        { "a token that is a number", "{\"claude\": {\"setup_token\": 42}}", "'claude.setup_token' must be a string", CREDS_TEXT },
        { "a token that is an array", "{\"claude\": {\"setup_token\": [\"sk-tbtest-secret-10\"]}}",
          "'claude.setup_token' must be a string", CREDS_TEXT },
        { "a token with a NUL", "{\"claude\": {\"setup_token\": \"sk-tbtest\\u0000secret-11\"}}", "NUL", CREDS_TEXT },
        { "another section's value that is a number",
          "{\"claude\": {\"setup_token\": \"sk-tbtest-secret-12\"}, \"opencode\": {\"api_key\": 5}}",
          "'opencode.api_key' must be a string", CREDS_TEXT },
        { "a section name outside the syntax", "{\"Claude!\": {\"x\": \"sk-tbtest-secret-13\"}}", "section name", CREDS_TEXT },
        { "invalid UTF-8", "{\"claude\": {\"setup_token\": \"sk-tbtest-secret-14\xff\xfe\"}}", "invalid utf-8", CREDS_TEXT },
        { "a folder", NULL, "is a folder", CREDS_FOLDER },
        { "a symbolic link", NULL, "is a symbolic link", CREDS_LINK },
        { "a file over 1 MiB", NULL, "larger than 1 MiB", CREDS_HUGE },
};

/* Make the Credentials file of one case at `path`. */
static void make_credentials(const char *path, enum creds_kind kind, const char *text, const char *dir)
{
        switch (kind) {
        case CREDS_TEXT:
                write_text(path, text, 0600);
                break;
        case CREDS_FOLDER:
                ck_assert_int_eq(mkdir(path, 0700), 0);
                break;
        case CREDS_LINK: {
                _cleanup_free_ char *target = xasprintf("%s/real-credentials.json", dir);
                write_text(target, "{\"claude\": {\"setup_token\": \"sk-tbtest-secret-link\"}}", 0600);
                ck_assert_int_eq(symlink(target, path), 0);
                break;
        }
        case CREDS_HUGE: {
                size_t n = 1024 * 1024 + 100;
                char *big = xmalloc(n + 64);
                strcpy(big, "{\"claude\": {\"setup_token\": \"sk-tbtest-secret-huge");
                size_t at = strlen(big);
                memset(big + at, 'x', n - at);
                strcpy(big + n, "\"}}");
                write_text(path, big, 0600);
                free(big);
                break;
        }
        }
}

/* The Harnesses that need Credentials: one loop run each. */
static const char *const needs_credentials[] = { "claude", "opencode" };

static void expect_no_secret(struct verdict *v, const char *what, const char *text)
{
        EXPECT(v, !text || !strstr(text, "sk-tbtest"), "a secret is in %s: \"%s\"", what, esc(text));
}

/* A loop test: run _i is needs_credentials[_i]. */
START_TEST(malformed_credentials_void_a_harness_that_needs_them)
{
        const char *harness = needs_credentials[_i];
        struct fixture f;
        struct cases cs = CASES_INIT;
        fixture_new(&f);
        _cleanup_free_ char *ran = xasprintf("%s/RAN", f.repo);
        for (size_t i = 0; i < TB_ARRAY_SIZE(bad_creds); i++) {
                const char *says = bad_creds[i].says;
                char case_name[200];
                snprintf(case_name, sizeof case_name, "%s: %s", harness, bad_creds[i].name);
                _cleanup_free_ char *cdir = xasprintf("%s/creds-%s-%zu", f.dir, harness, i);
                _cleanup_free_ char *path = xasprintf("%s/credentials.json", cdir);
                ck_assert_int_eq(mkdir(cdir, 0700), 0);
                make_credentials(path, bad_creds[i].kind, bad_creds[i].text, cdir);
                struct fixture g = f;
                snprintf(g.out, sizeof g.out, "%s/out-%s-%zu", f.dir, harness, i);
                struct proc_result r;
                struct verdict v = { 0 };
                tb_run(&r, harness, &g, NULL,
                       EXTRA("--credentials", path, "--harness-bin", "/bin/sh", "--", "-c", "touch RAN"));
                expect_refusal(&v, &r, 125, says);
                EXPECT(&v, strstr(r.err, "void (session_unavailable)"), "stderr does not say void: \"%s\"",
                       esc(r.err));
                EXPECT(&v, strstr(r.err, path), "stderr does not name the file");
                EXPECT(&v, !exists(ran), "the session ran");
                _cleanup_free_ char *cause = outcome_field(g.out, "cause");
                _cleanup_free_ char *detail = outcome_field(g.out, "detail");
                EXPECT(&v, cause && strcmp(cause, "session_unavailable") == 0, "cause %s",
                       cause ? cause : "(no outcome.json)");
                EXPECT(&v, detail && strstr(detail, says), "detail \"%s\" lacks \"%s\"", detail ? esc(detail) : "",
                       says);
                expect_no_secret(&v, "stderr", r.err);
                expect_no_secret(&v, "stdout", r.out);
                _cleanup_free_ char *outcome_path = xasprintf("%s/outcome.json", g.out);
                _cleanup_free_ char *outcome = read_text(outcome_path);
                expect_no_secret(&v, "outcome.json", outcome);
                expect_void_output(&v, g.out);
                case_end(&cs, case_name, &v);
                proc_result_free(&r);
                unlink(ran);
        }
        fixture_free(&f);
        cases_done(&cs);
}
END_TEST

START_TEST(malformed_credentials_do_not_stop_a_harness_that_needs_none)
{
        struct fixture f;
        struct cases cs = CASES_INIT;
        fixture_new(&f);
        _cleanup_free_ char *ran = xasprintf("%s/RAN", f.repo);
        for (size_t i = 0; i < TB_ARRAY_SIZE(bad_creds); i++) {
                const char *name = bad_creds[i].name;
                _cleanup_free_ char *cdir = xasprintf("%s/creds-%zu", f.dir, i);
                _cleanup_free_ char *path = xasprintf("%s/credentials.json", cdir);
                ck_assert_int_eq(mkdir(cdir, 0700), 0);
                make_credentials(path, bad_creds[i].kind, bad_creds[i].text, cdir);
                struct fixture g = f;
                snprintf(g.out, sizeof g.out, "%s/out-%zu", f.dir, i);
                struct proc_result r;
                struct verdict v = { 0 };
                tb_run(&r, "shell", &g, NULL, EXTRA("--credentials", path, "--", "-c", "touch RAN"));
                EXPECT(&v, r.status == 0, "status %d: %s", r.status, esc(r.err));
                EXPECT(&v, exists(ran), "the session did not run");
                EXPECT(&v, one_line(r.err), "stderr is not one line: \"%s\"", esc(r.err));
                _cleanup_free_ char *o = outcome_field(g.out, "outcome");
                EXPECT(&v, o && strcmp(o, "completed") == 0, "outcome %s", o ? o : "(none)");
                expect_no_secret(&v, "stderr", r.err);
                case_end(&cs, name, &v);
                proc_result_free(&r);
                unlink(ran);
        }
        fixture_free(&f);
        cases_done(&cs);
}
END_TEST

/* ---- manifests ---- */

START_TEST(malformed_manifests_are_refused_naming_the_file_and_the_field)
{
        struct fixture f;
        struct cases cs = CASES_INIT;
        fixture_new(&f);
        struct {
                const char *name, *text, *says;
        } cases[] = {
                { "truncated JSON", "{\"name\": \"mf\", \"default_binary\": \"/bin/sh\",", "invalid JSON at line 1" },
                { "a missing comma", "{\"name\": \"mf\"\n \"default_binary\": \"/bin/sh\"}", "invalid JSON at line 2" },
                { "an empty file", "", "invalid JSON at line 1, column 1" },
                { "text after the object", "{\"name\": \"mf\", \"default_binary\": \"/bin/sh\"} x", "invalid JSON" },
                { "a top level that is an array", "[\"mf\"]", "the top level must be a JSON object" },
                { "no name", "{\"default_binary\": \"/bin/sh\"}", "field 'name' is missing" },
                { "no default_binary", "{\"name\": \"mf\"}", "field 'default_binary' is missing" },
                { "an empty default_binary", "{\"name\": \"mf\", \"default_binary\": \"\"}",
                  "field 'default_binary' must not be empty" },
                { "a name that is not the file's", "{\"name\": \"other\", \"default_binary\": \"/bin/sh\"}",
                  "field 'name' is 'other', not the file's name 'mf'" },
                { "a default_binary that is a number", "{\"name\": \"mf\", \"default_binary\": 42}",
                  "field 'default_binary' must be a string" },
                { "a name that is null", "{\"name\": null, \"default_binary\": \"/bin/sh\"}",
                  "field 'name' is missing" },
                { "a require_any that is a string",
                  "{\"name\": \"mf\", \"default_binary\": \"/bin/sh\", \"require_any\": \"yes\"}",
                  "field 'require_any' must be true or false" },
                { "logins that is an object", "{\"name\": \"mf\", \"default_binary\": \"/bin/sh\", \"logins\": {}}",
                  "field 'logins' must be an array" },
                { "a login that is a string",
                  "{\"name\": \"mf\", \"default_binary\": \"/bin/sh\", \"logins\": [\"x\"]}",
                  "field 'logins[0]' must be an object" },
                { "a login without a mode",
                  "{\"name\": \"mf\", \"default_binary\": \"/bin/sh\", \"logins\": [{\"host\": \"~/.x\", \"sandbox\": "
                  "\"~/.x\"}]}",
                  "field 'logins[0].mode' is missing" },
                { "a login with a bad mode",
                  "{\"name\": \"mf\", \"default_binary\": \"/bin/sh\", \"logins\": [{\"host\": \"~/.x\", \"sandbox\": "
                  "\"~/.x\", "
                  "\"mode\": \"copy\"}]}",
                  "field 'logins[0].mode' must be \"synced\" or \"in_place\"" },
                { "a login with a relative host path",
                  "{\"name\": \"mf\", \"default_binary\": \"/bin/sh\", \"logins\": [{\"host\": \"x\", \"sandbox\": "
                  "\"~/.x\", "
                  "\"mode\": \"synced\"}]}",
                  "field 'logins[0].host'" },
                { "a login escaping the home",
                  "{\"name\": \"mf\", \"default_binary\": \"/bin/sh\", \"logins\": [{\"host\": \"~/.x\", \"sandbox\": "
                  "\"~/../../etc/x\", \"mode\": \"synced\"}]}",
                  "field 'logins[0].sandbox'" },
                { "a login whose required is a string",
                  "{\"name\": \"mf\", \"default_binary\": \"/bin/sh\", \"logins\": [{\"host\": \"~/.x\", \"sandbox\": "
                  "\"~/.x\", "
                  "\"mode\": \"synced\", \"required\": \"yes\"}]}",
                  "field 'logins[0].required' must be true or false" },
                { "a credential with a bad variable",
                  "{\"name\": \"mf\", \"default_binary\": \"/bin/sh\", \"credentials\": [{\"key\": \"k\", \"env\": "
                  "\"1X\"}]}",
                  "field 'credentials[0].env' is not a variable name" },
                { "a credential key with a dot",
                  "{\"name\": \"mf\", \"default_binary\": \"/bin/sh\", \"credentials\": [{\"key\": "
                  "\"claude.setup_token\", "
                  "\"env\": \"X\"}]}",
                  "field 'credentials[0].key'" },
                { "an env value that is a number",
                  "{\"name\": \"mf\", \"default_binary\": \"/bin/sh\", \"env\": {\"X\": 1}}",
                  "field 'env.X' must be a string" },
                { "an env name that is not a variable",
                  "{\"name\": \"mf\", \"default_binary\": \"/bin/sh\", \"env\": {\"A-B\": \"1\"}}",
                  "field 'env.A-B' is not a variable name" },
                { "a home file outside the home",
                  "{\"name\": \"mf\", \"default_binary\": \"/bin/sh\", \"home_files\": {\"../x\": \"y\"}}",
                  "field 'home_files.../x' must be a relative path inside the home" },
                { "an unknown field", "{\"name\": \"mf\", \"default_binary\": \"/bin/sh\", \"colour\": \"blue\"}",
                  "field 'colour' is not a manifest field" },
                { "a NUL in a string", "{\"name\": \"mf\", \"default_binary\": \"/bin/sh\\u0000x\"}",
                  "field 'default_binary' must not contain a NUL character" },
        };
        for (size_t i = 0; i < TB_ARRAY_SIZE(cases); i++) {
                _cleanup_free_ char *dir = xasprintf("%s/plugins-%zu", f.dir, i);
                _cleanup_free_ char *file = xasprintf("%s/mf.json", dir);
                _cleanup_free_ char *env = xasprintf("TRIALBOX_PLUGIN_PATH=%s", dir);
                ck_assert_int_eq(mkdir(dir, 0755), 0);
                write_text(file, cases[i].text, 0644);
                _cleanup_free_ char *says = xasprintf("manifest '%s'", file);
                usage_case(&cs, cases[i].name, f.out, ENV(env),
                           ARGS("run", "--harness", "mf", "--repo", f.repo, "--output-dir", f.out), 2, says);
                /* and the field, in the same line */
                struct proc_result r;
                struct verdict v = { 0 };
                tb_command(&r, ENV(env), ARGS("run", "--harness", "mf", "--repo", f.repo, "--output-dir", f.out));
                EXPECT(&v, strstr(r.err, cases[i].says), "stderr lacks \"%s\": \"%s\"", esc(cases[i].says), esc(r.err));
                EXPECT(&v, strstr(r.err, "fix the manifest"), "stderr does not say what to do: \"%s\"", esc(r.err));
                case_end(&cs, cases[i].name, &v);
                proc_result_free(&r);
                tmpdir_remove(f.out);
        }

        /* Files and folders around a manifest. */
        struct {
                const char *name;
                mode_t file_mode, dir_mode;
                bool folder, with_so;
                const char *says;
        } around[] = {
                { "a manifest writable by others", 0666, 0755, false, false, "is writable by others (mode 0666)" },
                { "a manifest writable by its group", 0664, 0755, false, false, "is writable by others (mode 0664)" },
                { "a manifest in a folder writable by others", 0644, 0777, false, false, "plugin folder" },
                { "a manifest that is a folder", 0644, 0755, true, false, "is not a regular file" },
                { "a manifest beside a plugin of the same name", 0644, 0755, false, true, "define harness 'mf'" },
        };
        for (size_t i = 0; i < TB_ARRAY_SIZE(around); i++) {
                _cleanup_free_ char *dir = xasprintf("%s/around-%zu", f.dir, i);
                _cleanup_free_ char *file = xasprintf("%s/mf.json", dir);
                _cleanup_free_ char *so = xasprintf("%s/mf.so", dir);
                _cleanup_free_ char *env = xasprintf("TRIALBOX_PLUGIN_PATH=%s", dir);
                ck_assert_int_eq(mkdir(dir, 0755), 0);
                if (around[i].folder)
                        ck_assert_int_eq(mkdir(file, 0755), 0);
                else
                        write_text(file, "{\"name\": \"mf\", \"default_binary\": \"/bin/sh\"}", around[i].file_mode);
                if (around[i].with_so)
                        write_text(so, "not really a plugin", 0644);
                ck_assert_int_eq(chmod(dir, around[i].dir_mode), 0);
                usage_case(&cs, around[i].name, f.out, ENV(env),
                           ARGS("run", "--harness", "mf", "--repo", f.repo, "--output-dir", f.out), 2, around[i].says);
        }

        /* A manifest over 256 KiB. */
        {
                _cleanup_free_ char *dir = xasprintf("%s/huge", f.dir);
                _cleanup_free_ char *file = xasprintf("%s/mf.json", dir);
                _cleanup_free_ char *env = xasprintf("TRIALBOX_PLUGIN_PATH=%s", dir);
                ck_assert_int_eq(mkdir(dir, 0755), 0);
                size_t n = 300 * 1024;
                char *big = xmalloc(n + 128);
                strcpy(big, "{\"name\": \"mf\", \"default_binary\": \"/bin/sh\", \"summary\": \"");
                size_t at = strlen(big);
                memset(big + at, 's', n - at);
                strcpy(big + n, "\"}");
                write_text(file, big, 0644);
                free(big);
                usage_case(&cs, "a manifest over 256 KiB", f.out, ENV(env),
                           ARGS("run", "--harness", "mf", "--repo", f.repo, "--output-dir", f.out), 2,
                           "larger than 256 KiB");
        }
        fixture_free(&f);
        cases_done(&cs);
}
END_TEST

/* ---- plugins ---- */


static off_t size_of(const char *path)
{
        struct stat st;
        ck_assert_int_eq(stat(path, &st), 0);
        return st.st_size;
}

START_TEST(bad_plugins_are_refused_with_one_line_naming_the_file)
{
        struct fixture f;
        struct cases cs = CASES_INIT;
        fixture_new(&f);
        struct {
                const char *name, *from, *as;
                mode_t mode, dir_mode;
                size_t max; /* bytes copied */
                int owner;  /* -1: ours */
                const char *says;
        } cases[] = {
                { "a plugin of another ABI major", FAKE_SO("fp_major", "major"), "major", 0755, 0755, SIZE_MAX, -1,
                  "speaks plugin ABI 2.0, this trialbox speaks 1." },
                { "a library without the symbol", FAKE_SO("fp_nosym", "nosym"), "nosym", 0755, 0755, SIZE_MAX, -1,
                  "does not export the symbol 'trialbox_harness'" },
                { "a plugin calling itself by another name", FAKE_SO("fp_mismatch", "mismatch"), "mismatch", 0755, 0755,
                  SIZE_MAX, -1, "calls itself 'other', not 'mismatch'" },
                { "a plugin writable by others", FAKE_SO("fp_good", "good"), "good", 0757, 0755, SIZE_MAX, -1,
                  "is writable by others (mode 0757)" },
                { "a plugin writable by its group", FAKE_SO("fp_good", "good"), "good", 0775, 0755, SIZE_MAX, -1,
                  "is writable by others (mode 0775)" },
                { "a plugin in a folder writable by others", FAKE_SO("fp_good", "good"), "good", 0755, 0777, SIZE_MAX,
                  -1, "plugin folder '" },
                { "a plugin of 64 bytes (the ELF header only)", FAKE_SO("fp_good", "good"), "good", 0755, 0755, 64, -1,
                  "is not a loadable library" },
                { "a plugin of 3 bytes", FAKE_SO("fp_good", "good"), "good", 0755, 0755, 3, -1,
                  "is not a loadable library (no ELF header)" },
                { "an empty plugin", FAKE_SO("fp_good", "good"), "good", 0755, 0755, 0, -1,
                  "is not a loadable library (no ELF header)" },
                { "a text file named good.so", NULL, "good", 0755, 0755, SIZE_MAX, -1,
                  "is not a loadable library (no ELF header)" },
                { "a plugin owned by another user", FAKE_SO("fp_good", "good"), "good", 0755, 0755, SIZE_MAX, 65534,
                  "is owned by uid 65534, neither root nor you" },
        };
        for (size_t i = 0; i < TB_ARRAY_SIZE(cases); i++) {
                if (cases[i].owner >= 0 && geteuid() != 0) {
                        printf("skipped case '%s': needs root\n", cases[i].name);
                        continue;
                }
                _cleanup_free_ char *dir = xasprintf("%s/plugins-%zu", f.dir, i);
                _cleanup_free_ char *file = xasprintf("%s/%s.so", dir, cases[i].as);
                _cleanup_free_ char *env = xasprintf("TRIALBOX_PLUGIN_PATH=%s", dir);
                ck_assert_int_eq(mkdir(dir, 0755), 0);
                if (cases[i].from)
                        copy_file(cases[i].from, file, cases[i].mode, cases[i].max);
                else
                        write_text(file, "#!/bin/sh\necho not a library\n", cases[i].mode);
                if (cases[i].owner >= 0)
                        ck_assert_int_eq(chown(file, (uid_t)cases[i].owner, (gid_t)cases[i].owner), 0);
                ck_assert_int_eq(chmod(dir, cases[i].dir_mode), 0);
                _cleanup_free_ char *says = xasprintf("'%s", dir);
                usage_case(&cs, cases[i].name, f.out, ENV(env),
                           ARGS("run", "--harness", cases[i].as, "--repo", f.repo, "--output-dir", f.out), 2,
                           cases[i].says);
                /* ... and the line names the file or its folder. */
                struct proc_result r;
                struct verdict v = { 0 };
                tb_command(&r, ENV(env), ARGS("run", "--harness", cases[i].as, "--repo", f.repo, "--output-dir", f.out));
                EXPECT(&v, strstr(r.err, says), "stderr does not name '%s': \"%s\"", dir, esc(r.err));
                case_end(&cs, cases[i].name, &v);
                proc_result_free(&r);
                tmpdir_remove(f.out);
        }

        /* The same good plugin, properly installed, works: the cases above fail for their one reason. */
        {
                _cleanup_free_ char *dir = xasprintf("%s/plugins-good", f.dir);
                _cleanup_free_ char *file = xasprintf("%s/good.so", dir);
                _cleanup_free_ char *env = xasprintf("TRIALBOX_PLUGIN_PATH=%s", dir);
                ck_assert_int_eq(mkdir(dir, 0755), 0);
                copy_file(FAKE_SO("fp_good", "good"), file, 0755, SIZE_MAX);
                struct proc_result r;
                struct verdict v = { 0 };
                tb_command(&r, ENV(env), ARGS("run", "--harness", "good", "--repo", f.repo, "--output-dir", f.out));
                EXPECT(&v, r.status == 0, "the good plugin fails: %d %s", r.status, esc(r.err));
                case_end(&cs, "the good plugin (control)", &v);
                proc_result_free(&r);
                tmpdir_remove(f.out);
        }
        fixture_free(&f);
        cases_done(&cs);
}
END_TEST

/* plugin_loader.c checks the ELF magic, then dlopen()s: a file cut short
 * after its program headers maps segments past its end, and the dynamic
 * loader touching them dies of SIGBUS (status 135): trialbox crashes
 * instead of refusing the plugin. */
START_TEST(a_truncated_plugin_is_refused_not_a_crash)
{
        struct fixture f;
        struct cases cs = CASES_INIT;
        fixture_new(&f);
        const char *good = FAKE_SO("fp_good", "good");
        size_t whole = (size_t)size_of(good);
        /* A copy interrupted at 4 KiB, a quarter, half of the file. */
        size_t sizes[] = { 4096, whole / 4, whole / 2 };
        for (size_t i = 0; i < TB_ARRAY_SIZE(sizes); i++) {
                char name[96];
                snprintf(name, sizeof name, "good.so cut at %zu of %zu bytes", sizes[i], whole);
                _cleanup_free_ char *dir = xasprintf("%s/plugins-%zu", f.dir, i);
                _cleanup_free_ char *file = xasprintf("%s/good.so", dir);
                _cleanup_free_ char *env = xasprintf("TRIALBOX_PLUGIN_PATH=%s", dir);
                ck_assert_int_eq(mkdir(dir, 0755), 0);
                copy_file(good, file, 0755, sizes[i]);
                usage_case(&cs, name, f.out, ENV(env),
                           ARGS("run", "--harness", "good", "--repo", f.repo, "--output-dir", f.out), 2,
                           "is not a loadable library");
        }
        fixture_free(&f);
        cases_done(&cs);
}
END_TEST

/* ---- `trialbox credentials` misused ---- */

START_TEST(credentials_misuse_gets_one_line_and_status_2_or_1_and_leaves_the_file_as_it_was)
{
        struct fixture f;
        struct cases cs = CASES_INIT;
        fixture_new(&f);
        /* A good file, a bad one, a folder, a link: what each case may touch. */
        _cleanup_free_ char *good = xasprintf("%s/good.json", f.dir);
        _cleanup_free_ char *bad = xasprintf("%s/bad.json", f.dir);
        _cleanup_free_ char *folder = xasprintf("%s/folder.json", f.dir);
        _cleanup_free_ char *link = xasprintf("%s/link.json", f.dir);
        _cleanup_free_ char *fresh = xasprintf("%s/new/credentials.json", f.dir);
        _cleanup_free_ char *huge = xasprintf("%s/huge-value", f.dir);
        static const char good_text[] = "{\"claude\": {\"setup_token\": \"sk-tbtest-stored\"}}";
        static const char bad_text[] = "{\"claude\": {\"setup_token\": \"sk-tbtest-stored\"";
        write_text(good, good_text, 0600);
        write_text(bad, bad_text, 0600);
        ck_assert_int_eq(mkdir(folder, 0700), 0);
        ck_assert_int_eq(symlink(good, link), 0);
        {
                size_t n = 1024 * 1024 + 10;
                char *big = xmalloc(n + 1);
                memset(big, 'v', n);
                big[n] = '\0';
                write_text(huge, big, 0600);
                free(big);
        }
        _cleanup_free_ char *nul = xasprintf("%s/nul", f.dir);
        {
                int fd = open(nul, O_WRONLY | O_CREAT | O_TRUNC, 0600);
                ck_assert_int_eq(write(fd, "sk-tbtest\0x\n", 12), 12);
                close(fd);
        }
        struct {
                const char *name;
                const char *const *args;
                const char *stdin_text; /* NULL: empty stdin */
                const char *stdin_file;
                int status;
                const char *says;
        } cases[] = {
                { "no command", ARGS("credentials", "--credentials", good), NULL, NULL, 2, "needs a command" },
                { "an unknown command", ARGS("credentials", "--credentials", good, "show"), NULL, NULL, 2,
                  "unknown credentials command 'show'" },
                { "set without a KEY", ARGS("credentials", "--credentials", good, "set"), "sk-tbtest-piped\n", NULL, 2,
                  "'set' needs a KEY" },
                { "set with a value on the command line",
                  ARGS("credentials", "--credentials", good, "set", "claude.setup_token", "sk-tbtest-on-argv"),
                  "sk-tbtest-piped\n", NULL, 2, "never from the command line" },
                { "unset without a KEY", ARGS("credentials", "--credentials", good, "unset"), NULL, NULL, 2,
                  "'unset' needs a KEY" },
                { "unset with two KEYs", ARGS("credentials", "--credentials", good, "unset", "a.b", "c.d"), NULL, NULL,
                  2, "'unset' takes only a KEY" },
                { "list with an argument", ARGS("credentials", "--credentials", good, "list", "claude"), NULL, NULL, 2,
                  "'list' takes no arguments" },
                { "a KEY without a section", ARGS("credentials", "--credentials", good, "set", "claude"),
                  "sk-tbtest-piped\n", NULL, 2, "'claude' is not a valid KEY" },
                { "a KEY with an upper-case section", ARGS("credentials", "--credentials", good, "set", "Claude.token"),
                  "sk-tbtest-piped\n", NULL, 2, "'Claude.token' is not a valid KEY" },
                { "a KEY with two dots", ARGS("credentials", "--credentials", good, "set", "a.b.c"),
                  "sk-tbtest-piped\n", NULL, 2, "'a.b.c' is not a valid KEY" },
                { "a KEY with a space", ARGS("credentials", "--credentials", good, "unset", "claude.setup token"), NULL,
                  NULL, 2, "is not a valid KEY" },
                { "an empty KEY", ARGS("credentials", "--credentials", good, "set", ""), "sk-tbtest-piped\n", NULL, 2,
                  "is not a valid KEY" },
                { "a KEY of '.x'", ARGS("credentials", "--credentials", good, "set", ".x"), "sk-tbtest-piped\n", NULL,
                  2, "is not a valid KEY" },
                { "--credentials without a file", ARGS("credentials", "list", "--credentials"), NULL, NULL, 2,
                  "option '--credentials' needs a file" },
                { "--credentials= (empty)", ARGS("credentials", "--credentials=", "list"), NULL, NULL, 2,
                  "option '--credentials' needs a file" },
                { "an unknown option", ARGS("credentials", "--credentials", good, "--bogus", "list"), NULL, NULL, 2,
                  "unknown option '--bogus'" },
                { "an empty value", ARGS("credentials", "--credentials", good, "set", "claude.setup_token"), "", NULL,
                  2, "the value on stdin is empty" },
                { "a value of one newline", ARGS("credentials", "--credentials", good, "set", "claude.setup_token"),
                  "\n", NULL, 2, "the value on stdin is empty" },
                { "a value with a NUL", ARGS("credentials", "--credentials", good, "set", "claude.setup_token"), NULL,
                  nul, 2, "contains a NUL byte" },
                { "a value that is not UTF-8", ARGS("credentials", "--credentials", good, "set", "claude.setup_token"),
                  "sk-tbtest-\xff\xfe\n", NULL, 2, "not UTF-8" },
                { "a value over 1 MiB", ARGS("credentials", "--credentials", good, "set", "claude.setup_token"), NULL,
                  huge, 2, "larger than 1 MiB" },
                { "set into a malformed file", ARGS("credentials", "--credentials", bad, "set", "claude.setup_token"),
                  "sk-tbtest-piped\n", NULL, 1, "invalid JSON at line 1" },
                { "unset from a malformed file",
                  ARGS("credentials", "--credentials", bad, "unset", "claude.setup_token"), NULL, NULL, 1,
                  "invalid JSON at line 1" },
                { "list a malformed file", ARGS("credentials", "--credentials", bad, "list"), NULL, NULL, 1,
                  "invalid JSON at line 1" },
                { "set into a folder", ARGS("credentials", "--credentials", folder, "set", "claude.setup_token"),
                  "sk-tbtest-piped\n", NULL, 1, "is a folder" },
                { "set through a link", ARGS("credentials", "--credentials", link, "set", "claude.setup_token"),
                  "sk-tbtest-piped\n", NULL, 1, "is a symbolic link" },
                { "unset a KEY that is not there",
                  ARGS("credentials", "--credentials", good, "unset", "opencode.api_key"), NULL, NULL, 1,
                  "'opencode.api_key' is not in credentials" },
                { "set into a folder that cannot be made",
                  ARGS("credentials", "--credentials", "/proc/nonexistent/credentials.json", "set", "a.b"),
                  "sk-tbtest-piped\n", NULL, 1, "cannot create the folder '/proc/nonexistent'" },
                { "a bad KEY for a new file", ARGS("credentials", "--credentials", fresh, "set", "x"),
                  "sk-tbtest-piped\n", NULL, 2, "is not a valid KEY" },
                { "an empty value for a new file", ARGS("credentials", "--credentials", fresh, "set", "a.b"), "", NULL,
                  2, "the value on stdin is empty" },
        };
        _cleanup_free_ char *in = xasprintf("%s/stdin", f.dir);
        for (size_t i = 0; i < TB_ARRAY_SIZE(cases); i++) {
                const char *stdin_path = cases[i].stdin_file ? cases[i].stdin_file : in;
                if (!cases[i].stdin_file)
                        write_text(in, cases[i].stdin_text ? cases[i].stdin_text : "", 0600);
                char *argv[16];
                size_t n = 0;
                argv[n++] = TRIALBOX_BIN;
                for (size_t k = 0; cases[i].args[k]; k++)
                        argv[n++] = (char *)cases[i].args[k];
                argv[n] = NULL;
                struct proc_result r;
                run_argv_in(&r, NULL, argv, stdin_path);
                struct verdict v = { 0 };
                expect_refusal(&v, &r, cases[i].status, cases[i].says);
                EXPECT(&v, r.out[0] == '\0', "stdout is not empty: \"%s\"", esc(r.out));
                expect_no_secret(&v, "stderr", r.err);
                _cleanup_free_ char *g = read_text(good), *b = read_text(bad);
                struct stat st;
                EXPECT(&v, g && strcmp(g, good_text) == 0, "the good file changed");
                EXPECT(&v, stat(good, &st) == 0 && (st.st_mode & 07777) == 0600, "the good file's mode changed");
                EXPECT(&v, b && strcmp(b, bad_text) == 0, "the malformed file changed");
                _cleanup_free_ char *lf = listing(folder);
                EXPECT(&v, !lf[0], "something was written into the folder: \"%s\"", lf);
                EXPECT(&v, lstat(link, &st) == 0 && S_ISLNK(st.st_mode), "the link was replaced");
                EXPECT(&v, !exists(fresh), "a new Credentials file was made");
                _cleanup_free_ char *top = listing(f.dir);
                EXPECT(&v, !strstr(top, ".tmp-"), "a temporary file is left: \"%s\"", top);
                case_end(&cs, cases[i].name, &v);
                proc_result_free(&r);
        }
        fixture_free(&f);
        cases_done(&cs);
}
END_TEST

/* A KEY that is not valid may be a secret typed in its place, or carry
 * control characters and escape sequences: `credentials` says it is not
 * valid without repeating it in full, and sends the terminal nothing raw. */
START_TEST(an_invalid_credentials_key_is_neither_repeated_in_full_nor_echoed_raw)
{
        struct fixture f;
        fixture_new(&f);
        _cleanup_free_ char *path = xasprintf("%s/credentials.json", f.dir);
        static const char *const keys[] = {
                "sk-ant-oat01-tbtest-a-secret-typed-where-the-KEY-belongs",
                "claude.\033]0;owned\007setup_token",
                "\033[2J\033[31mclaude.setup_token",
                "a\tb",
                "x\033[2J",
        };
        static const char *const verbs[] = { "set", "unset" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(keys) * TB_ARRAY_SIZE(verbs); i++) {
                const char *key = keys[i / TB_ARRAY_SIZE(verbs)], *verb = verbs[i % TB_ARRAY_SIZE(verbs)];
                struct proc_result r;
                run_argv(&r, tb_env(NULL),
                         (char *[]){ TRIALBOX_BIN, "credentials", "--credentials", path, (char *)verb, (char *)key, NULL });
                ck_assert_int_eq(r.status, 2);
                ck_assert_msg(strstr(r.err, "is not a valid KEY") != NULL, "%s: %s", verb, r.err);
                ck_assert_msg(strstr(r.err, key) == NULL, "%s repeats the KEY: %s", verb, r.err);
                size_t n = strlen(r.err);
                ck_assert_msg(n > 0 && r.err[n - 1] == '\n', "%s: not one line: %s", verb, r.err);
                for (size_t k = 0; k + 1 < n; k++)
                        ck_assert_msg((unsigned char)r.err[k] >= 0x20 && r.err[k] != 0x7f,
                                      "%s: byte %zu of stderr is 0x%02x, sent raw", verb, k, (unsigned char)r.err[k]);
                proc_result_free(&r);
        }
        /* An unknown command is quoted, escaped. */
        struct proc_result r;
        run_argv(&r, tb_env(NULL), (char *[]){ TRIALBOX_BIN, "credentials", "--credentials", path, "sh\033[2Jow", NULL });
        ck_assert_int_eq(r.status, 2);
        ck_assert_msg(strstr(r.err, "unknown credentials command 'sh\\x1b[2Jow'") != NULL, "%s", r.err);
        proc_result_free(&r);
        ck_assert_int_eq(access(path, F_OK), -1);
        fixture_free(&f);
}
END_TEST

TB_SUITE("badinput", 60)
{
        tcase_add_test(tc, bad_flags_are_usage_errors_with_one_line_and_no_output_folder);
        tcase_add_test(tc, a_missing_value_is_reported_as_missing_not_as_an_unknown_option);
        tcase_add_test(tc, a_repeated_or_empty_option_is_named_in_the_message);
        tcase_add_test(tc, control_characters_in_names_and_paths_are_not_echoed_raw);
        tcase_add_test(tc, trialbox_no_sandbox_with_a_bad_value_is_a_usage_error);
        tcase_add_test(tc, trialbox_cpus_busy_with_a_bad_value_is_a_usage_error);
        tcase_add_test(tc, a_repository_that_is_missing_or_not_a_folder_is_a_usage_error);
        tcase_add_test(tc, a_repository_with_spaces_newlines_or_non_ascii_in_its_path_works);
        tcase_add_test(tc, an_output_folder_that_is_a_link_inside_the_repository_or_used_is_refused);
        tcase_add_test(tc, an_output_folder_reaching_into_the_repository_by_a_link_or_dotdot_is_refused);
        tcase_add_loop_test(tc, malformed_credentials_void_a_harness_that_needs_them, 0,
                            (int)TB_ARRAY_SIZE(needs_credentials));
        tcase_add_test(tc, malformed_credentials_do_not_stop_a_harness_that_needs_none);
        tcase_add_test(tc, malformed_manifests_are_refused_naming_the_file_and_the_field);
        tcase_add_test(tc, bad_plugins_are_refused_with_one_line_naming_the_file);
        tcase_add_test(tc, a_truncated_plugin_is_refused_not_a_crash);
        tcase_add_test(tc, credentials_misuse_gets_one_line_and_status_2_or_1_and_leaves_the_file_as_it_was);
        tcase_add_test(tc, an_invalid_credentials_key_is_neither_repeated_in_full_nor_echoed_raw);
}
