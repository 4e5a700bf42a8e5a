/* `trialbox grade`: a grader's verdict on a Trial that ran. The grader is
 * itself a Trial (trial.h, trial/grader.h) of any Harness, run with its
 * own limits and network (none unless asked) in its own sandbox:
 *
 *   TRIAL_DIR/grade/        the grader's output folder (its fresh home,
 *                           its outcome.json, its verdict folder)
 *   TRIAL_DIR/grade.json    the verdict (model/grade.h), written atomically
 *   TRIAL_DIR/grade.attempt-N/   an earlier grade, moved aside (with its
 *                           grade.json) when the Trial is graded again
 *
 * The graded Trial's own record (TRIAL_DIR/outcome.json) is read, never
 * written: it must say completed or failed (a void Trial has nothing to
 * grade). One grade of a Trial runs at a time (a lock on TRIAL_DIR). */
#ifndef TB_TRIAL_GRADE_H
#define TB_TRIAL_GRADE_H

#include <stdbool.h>

#include "trial/grader.h"
#include "trial/trial.h"

/* Exit statuses of `grade` besides TB_EXIT_USAGE (2: nothing graded),
 * TB_EXIT_VOID (125: the grader never ran; it runs again when asked) and
 * TB_EXIT_ERROR (126: grade.json cannot be written). */
#define GRADE_EXIT_PASSED 0
#define GRADE_EXIT_FAILED 1
#define GRADE_EXIT_ERROR 3 /* the grader ran and gave no verdict */

struct grade_options {
        const char *trial_dir;    /* the graded Trial's output folder */
        struct trial_options run; /* the grader's Trial: its Harness, the graded repository, limits, network,
                                     session arguments; output_dir and grader are set by trial_grade() */
        struct trial_grader grader;
        bool json; /* grade.json's line on stdout too */
};

/* Grade the Trial in opt->trial_dir; prints its errors; returns the exit
 * status above. */
int trial_grade(struct grade_options *opt, const struct tb_env *env);

#endif
