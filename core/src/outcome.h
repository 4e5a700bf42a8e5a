/* The Outcome of a Trial: what happened, mapped from how the session ended,
 * written atomically to OUTPUT_DIR/outcome.json. */
#ifndef TB_OUTCOME_H
#define TB_OUTCOME_H

#include <stdbool.h>

#include "util.h"

/* trialbox's own exit statuses (the session's status is passed through for
 * completed and failed Trials, 128+N for a signal). */
#define TB_EXIT_USAGE 2   /* bad flags or input: nothing was run or written */
#define TB_EXIT_VOID 125  /* the Trial is void: outcome.json says why */
#define TB_EXIT_ERROR 126 /* trialbox itself failed (e.g. cannot write outcome.json) */

enum outcome_kind { OUTCOME_COMPLETED, OUTCOME_FAILED, OUTCOME_VOID };
enum outcome_cause { CAUSE_NONE, CAUSE_SANDBOX_UNAVAILABLE, CAUSE_SESSION_UNAVAILABLE };

/* How a session ended, as the supervisor saw it. */
struct session_result {
        bool started;     /* the session's process ran (bwrap reported it) */
        enum outcome_cause void_cause; /* when !started */
        int exit_code;    /* valid when started and signal == 0 */
        int signal;       /* the signal that ended it, or 0 */
        char detail[512]; /* when !started: why (bwrap's own message) */
};

struct outcome {
        enum outcome_kind kind;
        enum outcome_cause cause;
        const char *harness;
        char detail[1024];
        int exit_code; /* -1: none */
        int signal;    /* 0: none */
        bool sandboxed;
        const char *home;
        long long duration_ms;
};

const char *outcome_kind_name(enum outcome_kind k);
const char *outcome_cause_name(enum outcome_cause c);

/* Fill `o`'s kind, cause, detail, exit_code and signal from a session result. */
void outcome_from_session(struct outcome *o, const struct session_result *r);

/* Make `o` void with `cause` and `detail`. */
void outcome_set_void(struct outcome *o, enum outcome_cause cause, const char *detail);

/* The Outcome as one line of JSON (malloc'd). */
char *outcome_to_json(const struct outcome *o);

/* Write OUTPUT_DIR/outcome.json atomically (mode 0644). 0 or negative errno. */
int outcome_write(const struct outcome *o, const char *output_dir, struct tb_error *err);

/* The exit status trialbox ends with for this Outcome. */
int outcome_exit_status(const struct outcome *o);

#endif
