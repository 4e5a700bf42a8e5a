/* `trialbox check`: its command line, then trial/check.h's probes, each
 * verdict printed as it comes (a table, or one JSON object at the end). */
#include <json-c/json.h>
#include <stddef.h>
#include <stdio.h>

#include "base/macro.h"
#include "base/log.h"
#include "cmd/cli.h"
#include "cmd/exit.h"
#include "cmd/options.h"
#include "trial/check.h"

struct check_args {
        const char *harness;
        bool json;
        int v, q;
};

static const struct cli_option check_options[] = {
        { .kind = CLI_STRING, .name = "harness", .metavar = "NAME", .offset = offsetof(struct check_args, harness),
          .help = "also check this Harness: its plugin, its binary, its login" },
        { .kind = CLI_FLAG, .name = "json", .offset = offsetof(struct check_args, json),
          .help = "print the verdicts as one JSON object" },
        { .kind = CLI_COUNT, .name = "verbose", .short_name = 'v', .offset = offsetof(struct check_args, v),
          .help = "say what is done (twice: more)" },
        { .kind = CLI_COUNT, .name = "quiet", .short_name = 'q', .offset = offsetof(struct check_args, q),
          .help = "errors only" },
        { .kind = CLI_HELP, .name = "help", .short_name = 'h' },
};

static const struct cli_status check_statuses[] = {
        { "0", "a Trial can start here" },
        { "1", "a Trial cannot start here: fix what FAIL says" },
        { "2", "a usage error" },
};

const struct cli_usage cmd_check_usage = {
        .synopsis = "trialbox check [--harness NAME] [--json] [-v|-q]",
        .description = "Says whether a Trial can start here, one line per check (bwrap, namespaces,\n"
                       "user, seccomp, plugins, credentials, limits), each with its fix, and the\n"
                       "network a Trial of each Harness gets.\n",
        .stop_at_argument = true,
        .options = check_options,
        .n_options = TB_ARRAY_SIZE(check_options),
        .statuses = check_statuses,
        .n_statuses = TB_ARRAY_SIZE(check_statuses),
};

static const char *const verdict_names[] = { [CHECK_FAIL] = "fail", [CHECK_OK] = "ok", [CHECK_WARN] = "warn" };

/* One verdict as a row of the table: ok, FAIL or warn, what, detail; the fix below. */
static void print_verdict(void *ctx, const char *what, enum check_verdict v, const char *detail, const char *fix)
{
        (void)ctx;
        log_print("%-4s %-12s %s", v == CHECK_FAIL ? "FAIL" : verdict_names[v], what, detail);
        if (fix)
                log_print("     %-12s fix: %s", "", fix);
}

/* One verdict as an element of the JSON array `ctx`. */
static void add_verdict(void *ctx, const char *what, enum check_verdict v, const char *detail, const char *fix)
{
        json_object *o = json_object_new_object();
        json_object_object_add(o, "check", json_object_new_string(what));
        json_object_object_add(o, "ok", json_object_new_boolean(v != CHECK_FAIL));
        json_object_object_add(o, "verdict", json_object_new_string(verdict_names[v]));
        json_object_object_add(o, "detail", json_object_new_string(detail));
        json_object_object_add(o, "fix", fix ? json_object_new_string(fix) : NULL);
        json_object_array_add(ctx, o);
}

int cmd_check(const struct cli_command *self, const struct tb_env *env, int argc, char **argv)
{
        struct check_args a = { 0 };
        int first = 0, verbosity = 1, r = cli_parse(self, argc, argv, &a, &first);
        if (r != 0)
                return r == CLI_HELP_SHOWN ? 0 : r;
        if (first < argc)
                return cli_usage_error(self->name, "unexpected argument '%s'", argv[first]);
        if (cli_verbosity(self, a.v, a.q, &verbosity) != 0)
                return TB_EXIT_USAGE;
        log_set_verbosity(verbosity);
        if (!a.json) {
                bool ready = check_run(env, a.harness, print_verdict, NULL);
                printf("%s\n", ready ? "a Trial can start here" : "a Trial cannot start here: fix what FAIL says");
                return ready ? CLI_EXIT_OK : CLI_EXIT_FAILED;
        }
        json_object *checks = json_object_new_array(), *o = json_object_new_object();
        bool ready = check_run(env, a.harness, add_verdict, checks);
        json_object_object_add(o, "ready", json_object_new_boolean(ready));
        json_object_object_add(o, "checks", checks);
        printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(o);
        return ready ? CLI_EXIT_OK : CLI_EXIT_FAILED;
}
