/* A grader's verdict on a Trial: OUTPUT_DIR/grade.json, which a batch
 * carries into the Trial's results line as `grade`. It sits beside the
 * Trial's Outcome and never changes it.
 *
 *   {"status": "passed" | "failed" | "error" | "void",
 *    "cause": null | why it is an error or void ("timeout", "out_of_memory",
 *             "signal", "verdict_file", "interrupted", "repository_gone",
 *             "sandbox_unavailable", "session_unavailable", "launcher_lost"),
 *    "score": a number or null, "detail": one sentence,
 *    "exit_code", "signal", "duration_ms", "usage", "tokens" (the grader's
 *    Outcome's: what a model grader cost),
 *    "layer": "bwrap-overlay" | "overlayfs" | "copy" | null (none was made),
 *    "harness": the grader's Harness, "graded_at": RFC 3339 UTC,
 *    "trialbox_version"}
 *
 * `passed` and `failed` are verdicts; `error` means the grader ran but gave
 * none (it hung past its timeout, ran out of memory, wrote a bad verdict
 * file); `void` means it never ran, through no fault of the Trial (its
 * sandbox or login was unavailable, the Trial's repository is gone, it was
 * interrupted): a void grade is graded again, without the Trial. */
#ifndef TB_GRADE_H
#define TB_GRADE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

enum grade_status { GRADE_PASSED, GRADE_FAILED, GRADE_ERROR, GRADE_VOID };

/* "passed", "failed", "error", "void". */
const char *grade_status_name(enum grade_status s);
/* The status named `s`: 0, or -EINVAL. */
int grade_status_parse(const char *s, enum grade_status *out);

/* The verdict file a grader may write (TRIALBOX_GRADE_FILE): one JSON
 * object, at most GRADE_VERDICT_MAX bytes, every key optional, no other key:
 *   "passed": true | false   the verdict (else the grader's exit status is)
 *   "score":  a finite number (the grader's own scale)
 *   "detail": a string of UTF-8, at most GRADE_DETAIL_MAX bytes */
#define GRADE_VERDICT_MAX 65536
#define GRADE_DETAIL_MAX 1000

struct grade_verdict {
        bool has_passed, passed;
        bool has_score;
        double score;
        bool has_detail;
        char detail[GRADE_DETAIL_MAX + 1];
};

/* Parse a verdict file's `len` bytes: 0, or -EINVAL with `why` (one line:
 * what is wrong, "key 'pass' is not one of passed, score, detail"). */
int grade_verdict_parse(const char *text, size_t len, struct grade_verdict *v, char *why, size_t why_len);

/* What became of the verdict file. */
enum grade_verdict_state {
        VERDICT_NONE,      /* not written: the exit status decides */
        VERDICT_OK,        /* read and valid */
        VERDICT_MALFORMED, /* there, but not a verdict: the grade is an error, `why` */
};

struct grade {
        enum grade_status status;
        const char *cause; /* NULL, or one of the causes above (static) */
        bool has_score;
        double score;
        char detail[1024];
        int exit_code;         /* -1: none */
        int signal;            /* 0: none */
        long long duration_ms; /* -1: unknown */
        json_object *usage;    /* a reference of the grader's Outcome's `usage`, or NULL */
        json_object *tokens;   /* and of its `tokens` (a model grader's cost), or NULL */
        const char *layer;     /* NULL: no layer was made */
        const char *harness;
};

/* Fill `g` from the grader's Outcome `grader` (its outcome.json, parsed;
 * NULL when it wrote none) and its verdict file (`state`, with `v` when
 * VERDICT_OK, `why` when VERDICT_MALFORMED). No system calls: the table of
 * cases is a unit test. `g->usage` and `g->tokens` take a reference;
 * grade_done drops them.
 *  - no final Outcome: void/launcher_lost; void: void, the grader's cause;
 *  - failed by its timeout or out of memory: error/timeout, out_of_memory;
 *  - ended by SIGINT, SIGTERM, SIGHUP or SIGKILL (a signal is recorded only
 *    when trialbox sent it: an interruption): void/interrupted; another
 *    signal: error/signal;
 *  - a malformed verdict file: error/verdict_file;
 *  - else the file's `passed` when it has one, the exit status (0) when not. */
void grade_decide(struct grade *g, json_object *grader, enum grade_verdict_state state, const struct grade_verdict *v,
                  const char *why);

/* A void grade with `cause` and `detail` (nothing ran). */
void grade_set_void(struct grade *g, const char *cause, const char *detail);

/* The grade.json object (a new reference). */
json_object *grade_to_json(const struct grade *g);

/* Write grade.json as `name` in `dirfd`, atomically and synced (mode 0644).
 * 0, or a negative errno with `err`. */
int grade_write_at(const struct grade *g, int dirfd, const char *name, struct tb_error *err);

void grade_done(struct grade *g);

#endif
