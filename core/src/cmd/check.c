/* `trialbox check`: trial/check.h's probes, each verdict printed as it
 * comes (a table, or one JSON object at the end). */
#include <json-c/json.h>
#include <stdio.h>

#include "base/log.h"
#include "cmd/cli.h"
#include "trial/check.h"

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

int check_main(const struct tb_env *env, const char *harness, int json)
{
        if (!json) {
                bool ready = check_run(env, harness, print_verdict, NULL);
                printf("%s\n", ready ? "a Trial can start here" : "a Trial cannot start here: fix what FAIL says");
                return ready ? 0 : 1;
        }
        json_object *checks = json_object_new_array(), *o = json_object_new_object();
        bool ready = check_run(env, harness, add_verdict, checks);
        json_object_object_add(o, "ready", json_object_new_boolean(ready));
        json_object_object_add(o, "checks", checks);
        printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(o);
        return ready ? 0 : 1;
}
