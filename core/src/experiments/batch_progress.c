/* A batch's live progress line (on a terminal) and its finished lines
 * (otherwise) (experiments/batch_internal.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/str.h"
#include "experiments/batch_internal.h"
#include "model/outcome.h"

/* ---- progress ---- */

static void fmt_secs(long long ms, char *buf, size_t n)
{
        long long s = ms / 1000;
        if (s >= 3600)
                snprintf(buf, n, "%lldh%02lldm", s / 3600, s / 60 % 60);
        else if (s >= 60)
                snprintf(buf, n, "%lldm%02llds", s / 60, s % 60);
        else
                snprintf(buf, n, "%llds", s);
}

size_t batch_total(const struct batch *b) { return b->opt->index >= 0 ? 1 : b->n; }

void batch_progress_line(struct batch *b)
{
        if (!b->tty || b->opt->verbosity < 1)
                return;
        long long elapsed = now_ms() - b->start_ms;
        char el[32], eta[32] = "-";
        fmt_secs(elapsed, el, sizeof el);
        size_t left = batch_total(b) - b->done;
        if (b->done_here > 0 && left > 0)
                fmt_secs(elapsed * (long long)left / (long long)b->done_here, eta, sizeof eta);
        char grades[96] = "";
        size_t no_verdict = b->grade_errors + b->grade_voids;
        if (b->any_grader && no_verdict)
                snprintf(grades, sizeof grades, "; graded %zu, passed %zu, no verdict %zu", b->graded, b->passed,
                         no_verdict);
        else if (b->any_grader)
                snprintf(grades, sizeof grades, "; graded %zu, passed %zu", b->graded, b->passed);
        fprintf(stderr, "\r\033[K[%zu/%zu] completed %zu, failed %zu, void %zu%s; running %zu; %s elapsed, eta %s",
                b->done, batch_total(b), b->completed, b->failed, b->voids + b->unrecorded, grades, b->running, el,
                eta);
        fflush(stderr);
}

void batch_progress_end(struct batch *b)
{
        if (b->tty && b->opt->verbosity >= 1)
                fputs("\r\033[K", stderr);
}

void batch_note_finished(struct batch *b, struct btrial *t, json_object *rec)
{
        if (b->tty || b->opt->verbosity < 1 || t->noted)
                return;
        t->noted = true;
        json_object *c = NULL, *d = NULL;
        json_object_object_get_ex(rec, "cause", &c);
        json_object_object_get_ex(rec, "duration_ms", &d);
        _cleanup_free_ char *id = str_escape((t->p->id));
        const char *cause = c ? json_object_get_string(c) : NULL;
        /* A record without a duration (a launcher's that ran no session) says none. */
        _cleanup_free_ char *took = d && json_object_is_type(d, json_type_int)
                                            ? xasprintf(", %lld ms", (long long)json_object_get_int64(d))
                                            : xstrdup("");
        log_error("[%zu/%zu] %s: %s%s%s%s, attempt %u%s", b->done, batch_total(b), id,
                  t->kind == BATCH_KIND_UNRECORDED ? "unrecorded" : outcome_kind_name((enum outcome_kind)t->kind),
                  cause ? " (" : "", cause ? cause : "", cause ? ")" : "", t->attempt, took);
}

void batch_note_graded(struct batch *b, struct btrial *t, json_object *grade)
{
        if (b->tty || b->opt->verbosity < 1)
                return;
        json_object *st = NULL, *c = NULL, *l = NULL;
        json_object_object_get_ex(grade, "status", &st);
        json_object_object_get_ex(grade, "cause", &c);
        json_object_object_get_ex(grade, "layer", &l);
        const char *cause = c ? json_object_get_string(c) : NULL;
        _cleanup_free_ char *id = str_escape(t->p->id);
        _cleanup_free_ char *shown = str_escape(st ? json_object_get_string(st) : "void");
        log_error("%s: graded %s%s%s%s (layer %s); graded %zu, passed %zu", id, shown, cause ? " (" : "",
                  cause ? cause : "", cause ? ")" : "", l ? json_object_get_string(l) : "none", b->graded, b->passed);
}
