/* A grader's Trial: a Trial (trial.h) of any Harness whose repository is
 * another Trial's final one, seen behind a copy-on-write layer that is
 * thrown away. What makes it a grader is all here; trial.c calls it where
 * a Trial would bind and guard its repository:
 *  - the repository at its own path, writable, through the layer
 *    (sandbox/cow.h): the best one that works here, or the one asked for;
 *  - the grader's own files (hidden tests, a rubric) read-only at
 *    GRADER_FILES_DIR: a host folder no Trial's session sees;
 *  - OUTPUT_DIR/verdict read-write at GRADER_VERDICT_DIR, and
 *    TRIALBOX_GRADE_FILE naming the verdict file in it (model/grade.h),
 *    read after the session through the folder's fd;
 *  - no repository guard: what the grader writes into the repository
 *    goes into the layer and is thrown away with it, and nothing of the
 *    layer runs on the host afterwards. Its home and output folder are
 *    any Trial's (setuid bits cleared after it). */
#ifndef TB_TRIAL_GRADER_H
#define TB_TRIAL_GRADER_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/error.h"
#include "base/tree.h"
#include "sandbox/cow.h"
#include "sandbox/spec.h"

#define GRADER_FILES_DIR "/grader"
#define GRADER_VERDICT_DIR "/sandbox/grade"
#define GRADER_VERDICT_FILE "verdict.json"
/* In the grader's output folder: the verdict folder, and a copy layer. */
#define GRADER_VERDICT_FOLDER "verdict"
#define GRADER_COPY_FOLDER "layer"

struct session_user;

struct trial_grader {
        const char *files;         /* the grader's own folder, or NULL */
        enum cow_layer layer;      /* COW_AUTO: the best that works here */
        char *const *env;          /* "NAME=VALUE" for the grader's session (NULL-terminated, may be NULL) */
        const char *trial_outcome; /* the graded Trial's: TRIALBOX_TRIAL_OUTCOME */
        /* Filled by the Trial. */
        enum cow_layer layer_used;    /* COW_AUTO: no layer was made (void before it) */
        int verdict_fd;               /* OUTPUT_DIR/verdict, opened when made: -1 until then; the caller closes it */
        long long layer_ms;           /* the layer's set-up in trialbox (the copy; a probe), ms */
        struct tree_clone_stats copy; /* COW_COPY: what was copied */
};
#define TRIAL_GRADER_INIT { .verdict_fd = -1 }

/* What the Trial knows that the grader's spec needs. */
struct grader_host {
        const char *repo;   /* the repository, real */
        const char *output; /* the grader's output folder, made */
        const char *bwrap;
        long long size;     /* the layer's size: the memory limit, or <= 0 for the kernel's default */
        const struct session_user *user;
        bool dry_run;
};

/* The grader's part of the spec, where a Trial binds its repository: the
 * layer (made, for a copy), the files, the verdict folder (made, given to
 * the session's user), the environment. 0, or a negative errno with `err`
 * (the grader is void: its sandbox is unavailable). */
int grader_spec(struct trial_grader *g, const struct grader_host *h, struct sandbox_spec *spec, struct tb_error *err);

/* After the session: a copy layer removed, the setuid and setgid bits of
 * what `uid` owns in the output folder cleared. */
void grader_after(struct trial_grader *g, const char *output, uid_t uid);

#endif
