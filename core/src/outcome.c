#define _GNU_SOURCE
#include "outcome.h"

#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

const char *outcome_kind_name(enum outcome_kind k)
{
        switch (k) {
        case OUTCOME_COMPLETED:
                return "completed";
        case OUTCOME_FAILED:
                return "failed";
        case OUTCOME_VOID:
                return "void";
        }
        return "void";
}

const char *outcome_cause_name(enum outcome_cause c)
{
        switch (c) {
        case CAUSE_SANDBOX_UNAVAILABLE:
                return "sandbox_unavailable";
        case CAUSE_SESSION_UNAVAILABLE:
                return "session_unavailable";
        case CAUSE_NONE:
                break;
        }
        return NULL;
}

void outcome_set_void(struct outcome *o, enum outcome_cause cause, const char *detail)
{
        o->kind = OUTCOME_VOID;
        o->cause = cause;
        o->exit_code = -1;
        o->signal = 0;
        snprintf(o->detail, sizeof o->detail, "%s", detail);
}

void outcome_from_session(struct outcome *o, const struct session_result *r)
{
        if (!r->started) {
                outcome_set_void(o, r->void_cause != CAUSE_NONE ? r->void_cause : CAUSE_SANDBOX_UNAVAILABLE, r->detail);
                return;
        }
        o->cause = CAUSE_NONE;
        if (r->signal > 0) {
                o->kind = OUTCOME_FAILED;
                o->exit_code = -1;
                o->signal = r->signal;
                snprintf(o->detail, sizeof o->detail, "the session was killed by signal %d (SIG%s)", r->signal,
                         sigabbrev_np(r->signal) ? sigabbrev_np(r->signal) : "?");
        } else if (r->exit_code == 0) {
                o->kind = OUTCOME_COMPLETED;
                o->exit_code = 0;
                o->signal = 0;
                snprintf(o->detail, sizeof o->detail, "the session exited with status 0");
        } else {
                o->kind = OUTCOME_FAILED;
                o->exit_code = r->exit_code;
                o->signal = 0;
                snprintf(o->detail, sizeof o->detail, "the session exited with status %d", r->exit_code);
        }
}

char *outcome_to_json(const struct outcome *o)
{
        json_object *j = json_object_new_object();
        const char *cause = outcome_cause_name(o->cause);

        json_object_object_add(j, "harness", json_object_new_string(o->harness ? o->harness : ""));
        json_object_object_add(j, "outcome", json_object_new_string(outcome_kind_name(o->kind)));
        json_object_object_add(j, "cause", o->kind == OUTCOME_VOID && cause ? json_object_new_string(cause) : NULL);
        json_object_object_add(j, "detail", json_object_new_string(o->detail));
        json_object_object_add(j, "exit_code", o->exit_code >= 0 ? json_object_new_int(o->exit_code) : NULL);
        json_object_object_add(j, "signal", o->signal > 0 ? json_object_new_int(o->signal) : NULL);
        json_object_object_add(j, "sandboxed", json_object_new_boolean(o->sandboxed));
        json_object_object_add(j, "home", o->home ? json_object_new_string(o->home) : NULL);
        json_object_object_add(j, "duration_ms", json_object_new_int64(o->duration_ms));
        char *s = xstrdup(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(j);
        return s;
}

int outcome_write(const struct outcome *o, const char *output_dir, struct tb_error *err)
{
        _cleanup_close_ int dirfd = open(output_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0)
                return tb_fail(err, -errno, "writing the outcome: cannot open '%s': %s", output_dir, strerror(errno));
        _cleanup_free_ char *json = outcome_to_json(o);
        size_t len = strlen(json);
        json = xrealloc(json, len + 2);
        json[len++] = '\n';
        json[len] = '\0';
        /* Whole or absent, even after a crash (the data is synced before the
         * rename); the folder is not synced: a lost outcome.json reads as a
         * Trial that did not finish, never as a wrong one. */
        int r = write_file_atomic_at_flags(dirfd, "outcome.json", json, len, 0644, WRITE_SYNC_FILE);
        if (r < 0)
                return tb_fail(err, r, "writing '%s/outcome.json': %s; free space or fix the folder's permissions",
                               output_dir, strerror(-r));
        return 0;
}

int outcome_exit_status(const struct outcome *o)
{
        switch (o->kind) {
        case OUTCOME_COMPLETED:
                return 0;
        case OUTCOME_FAILED:
                return o->signal > 0 ? 128 + o->signal : (o->exit_code & 0xff);
        case OUTCOME_VOID:
                break;
        }
        return TB_EXIT_VOID;
}
