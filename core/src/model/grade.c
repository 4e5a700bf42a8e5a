#define _GNU_SOURCE
#include "model/grade.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/fileio.h"
#include "base/macro.h"
#include "base/utf8.h"
#include "model/outcome.h"

#ifndef TB_VERSION
#define TB_VERSION "unknown"
#endif

static const char *const status_names[] = {
        [GRADE_PASSED] = "passed",
        [GRADE_FAILED] = "failed",
        [GRADE_ERROR] = "error",
        [GRADE_VOID] = "void",
};

const char *grade_status_name(enum grade_status s)
{
        return (size_t)s < TB_ARRAY_SIZE(status_names) ? status_names[s] : "error";
}

int grade_status_parse(const char *s, enum grade_status *out)
{
        for (size_t i = 0; s && i < TB_ARRAY_SIZE(status_names); i++)
                if (strcmp(s, status_names[i]) == 0) {
                        *out = (enum grade_status)i;
                        return 0;
                }
        return -EINVAL;
}

/* ---- the verdict file ---- */

/* Say in `why` what is wrong; -EINVAL. */
static int bad(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(char *why, size_t n, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, n, fmt, ap);
        va_end(ap);
        return -EINVAL;
}

static int verdict_key(const char *key, json_object *val, struct grade_verdict *v, char *why, size_t n)
{
        if (strcmp(key, "passed") == 0) {
                if (!json_object_is_type(val, json_type_boolean))
                        return bad(why, n, "'passed' is not true or false");
                v->has_passed = true;
                v->passed = json_object_get_boolean(val);
                return 0;
        }
        if (strcmp(key, "score") == 0) {
                bool number = json_object_is_type(val, json_type_int) || json_object_is_type(val, json_type_double);
                if (!number || !isfinite(json_object_get_double(val)))
                        return bad(why, n, "'score' is not a finite number");
                v->has_score = true;
                v->score = json_object_get_double(val);
                return 0;
        }
        if (strcmp(key, "detail") == 0) {
                if (!json_object_is_type(val, json_type_string))
                        return bad(why, n, "'detail' is not a string");
                const char *s = json_object_get_string(val);
                size_t len = (size_t)json_object_get_string_len(val);
                if (len > GRADE_DETAIL_MAX)
                        return bad(why, n, "'detail' is longer than %d bytes", GRADE_DETAIL_MAX);
                if (strlen(s) != len || !utf8_is_valid(s, len))
                        return bad(why, n, "'detail' is not UTF-8 text");
                v->has_detail = true;
                memcpy(v->detail, s, len + 1);
                return 0;
        }
        size_t len = strlen(key);
        if (len > 40 || strspn(key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != len)
                return bad(why, n, "a key that is not one of passed, score, detail");
        return bad(why, n, "key '%s' is not one of passed, score, detail", key);
}

int grade_verdict_parse(const char *text, size_t len, struct grade_verdict *v, char *why, size_t why_len)
{
        *v = (struct grade_verdict){ 0 };
        if (len > GRADE_VERDICT_MAX)
                return bad(why, why_len, "larger than %d bytes", GRADE_VERDICT_MAX);
        if (strnlen(text, len) != len)
                return bad(why, why_len, "a NUL byte: not JSON text");
        json_tokener *tok = json_tokener_new();
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
        json_object *j = json_tokener_parse_ex(tok, text, (int)len);
        enum json_tokener_error jerr = json_tokener_get_error(tok);
        size_t end = json_tokener_get_parse_end(tok);
        json_tokener_free(tok);
        int r = 0;
        if (!j || jerr != json_tokener_success)
                r = bad(why, why_len, "not JSON (%s)",
                        jerr == json_tokener_continue ? "it ends too soon" : json_tokener_error_desc(jerr));
        else if (strspn(text + end, " \t\r\n") != len - end)
                r = bad(why, why_len, "text after the JSON object");
        else if (!json_object_is_type(j, json_type_object))
                r = bad(why, why_len, "not a JSON object");
        if (r == 0) {
                json_object_object_foreach(j, key, val) {
                        r = verdict_key(key, val, v, why, why_len);
                        if (r < 0)
                                break;
                }
        }
        json_object_put(j);
        return r;
}

/* ---- the decision ---- */

static const char *str_field(json_object *j, const char *key)
{
        json_object *v;
        return j && json_object_object_get_ex(j, key, &v) && json_object_is_type(v, json_type_string)
                       ? json_object_get_string(v)
                       : NULL;
}

static long long int_field(json_object *j, const char *key, long long none)
{
        json_object *v;
        return j && json_object_object_get_ex(j, key, &v) && json_object_is_type(v, json_type_int)
                       ? json_object_get_int64(v)
                       : none;
}

void grade_set_void(struct grade *g, const char *cause, const char *detail)
{
        g->status = GRADE_VOID;
        g->cause = cause;
        snprintf(g->detail, sizeof g->detail, "%s", detail);
}

/* The known void causes of an Outcome, as static strings. */
static const char *void_cause(const char *c)
{
        static const char *const known[] = { "sandbox_unavailable", "session_unavailable", "launcher_lost" };
        for (size_t i = 0; c && i < TB_ARRAY_SIZE(known); i++)
                if (strcmp(c, known[i]) == 0)
                        return known[i];
        return "session_unavailable";
}

/* The grader ran and ended without a verdict of its own: 1 (g filled), else 0. */
static int ran_without_verdict(struct grade *g, const char *cause, const char *detail)
{
        if (cause && (strcmp(cause, "timeout") == 0 || strcmp(cause, "out_of_memory") == 0)) {
                g->status = GRADE_ERROR;
                g->cause = strcmp(cause, "timeout") == 0 ? "timeout" : "out_of_memory";
                snprintf(g->detail, sizeof g->detail, "the grader gave no verdict: %s", detail ? detail : cause);
                return 1;
        }
        if (g->signal == 0)
                return 0;
        bool interrupted = g->signal == SIGINT || g->signal == SIGTERM || g->signal == SIGHUP || g->signal == SIGKILL;
        g->status = interrupted ? GRADE_VOID : GRADE_ERROR;
        g->cause = interrupted ? "interrupted" : "signal";
        snprintf(g->detail, sizeof g->detail, "%s by signal %d",
                 interrupted ? "the grader was interrupted" : "the grader was killed", g->signal);
        return 1;
}

void grade_decide(struct grade *g, json_object *grader, enum grade_verdict_state state, const struct grade_verdict *v,
                  const char *why)
{
        const char *kind = str_field(grader, "outcome");
        g->exit_code = (int)int_field(grader, "exit_code", -1);
        g->signal = (int)int_field(grader, "signal", 0);
        g->duration_ms = int_field(grader, "duration_ms", -1);
        json_object *f = NULL;
        if (grader && json_object_object_get_ex(grader, "usage", &f) && json_object_is_type(f, json_type_object))
                g->usage = json_object_get(f);
        if (grader && json_object_object_get_ex(grader, "tokens", &f) && json_object_is_type(f, json_type_object))
                g->tokens = json_object_get(f);
        if (!kind || (strcmp(kind, "completed") != 0 && strcmp(kind, "failed") != 0)) {
                if (kind && strcmp(kind, "void") == 0)
                        grade_set_void(g, void_cause(str_field(grader, "cause")),
                                       str_field(grader, "detail") ? str_field(grader, "detail") : "void");
                else
                        grade_set_void(g, "launcher_lost", "the grader left no final Outcome");
                return;
        }
        if (strcmp(kind, "failed") == 0 &&
            ran_without_verdict(g, str_field(grader, "cause"), str_field(grader, "detail")))
                return;
        if (state == VERDICT_MALFORMED) {
                g->status = GRADE_ERROR;
                g->cause = "verdict_file";
                snprintf(g->detail, sizeof g->detail, "the grader's verdict file is not a verdict: %s",
                         why ? why : "?");
                return;
        }
        bool have = state == VERDICT_OK;
        if (have && v->has_score) {
                g->has_score = true;
                g->score = v->score;
        }
        if (have && v->has_passed)
                g->status = v->passed ? GRADE_PASSED : GRADE_FAILED;
        else
                g->status = g->exit_code == 0 ? GRADE_PASSED : GRADE_FAILED;
        if (have && v->has_detail)
                snprintf(g->detail, sizeof g->detail, "%s", v->detail);
        else if (have && v->has_passed)
                snprintf(g->detail, sizeof g->detail, "the grader's verdict file says %s",
                         v->passed ? "passed" : "failed");
        else
                snprintf(g->detail, sizeof g->detail, "the grader exited with status %d", g->exit_code);
}

/* ---- the record ---- */

json_object *grade_to_json(const struct grade *g)
{
        json_object *j = json_object_new_object();
        char at[40];
        json_object_object_add(j, "status", json_object_new_string(grade_status_name(g->status)));
        json_object_object_add(j, "cause", g->cause ? json_object_new_string(g->cause) : NULL);
        json_object_object_add(j, "score", g->has_score ? json_object_new_double(g->score) : NULL);
        json_object_object_add(j, "detail", json_object_new_string(g->detail));
        json_object_object_add(j, "exit_code", g->exit_code >= 0 ? json_object_new_int(g->exit_code) : NULL);
        json_object_object_add(j, "signal", g->signal > 0 ? json_object_new_int(g->signal) : NULL);
        json_object_object_add(j, "duration_ms", g->duration_ms >= 0 ? json_object_new_int64(g->duration_ms) : NULL);
        json_object_object_add(j, "usage", g->usage ? json_object_get(g->usage) : NULL);
        json_object_object_add(j, "tokens", g->tokens ? json_object_get(g->tokens) : NULL);
        json_object_object_add(j, "layer", g->layer ? json_object_new_string(g->layer) : NULL);
        json_object_object_add(j, "harness", g->harness ? json_object_new_string(g->harness) : NULL);
        json_object_object_add(j, "graded_at",
                               json_object_new_string(outcome_format_time(outcome_realtime_ms(), at, sizeof at)));
        json_object_object_add(j, "trialbox_version", json_object_new_string(TB_VERSION));
        return j;
}

int grade_write_at(const struct grade *g, int dirfd, const char *name, struct tb_error *err)
{
        json_object *j = grade_to_json(g);
        _cleanup_free_ char *line = xasprintf(
                "%s\n", json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(j);
        int r = write_file_atomic_at(dirfd, name, line, strlen(line), 0644, WRITE_SYNC_FILE | WRITE_SYNC_DIR);
        if (r < 0)
                return tb_fail(err, r, "cannot write the grade '%s': %s", name, strerror(-r));
        return 0;
}

void grade_done(struct grade *g)
{
        json_object_put(g->usage);
        json_object_put(g->tokens);
        g->usage = g->tokens = NULL;
}
