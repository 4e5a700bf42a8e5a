/* A plan line's `grade`: the grader of its Trial, run by the batch as one
 * `trialbox grade` (trial/grade.h) after the Trial completed or failed.
 * Its fields are a Trial's, and the grader's own files:
 *   harness (required), args, harness_bin, credentials, user, root_session,
 *   timeout, kill_after, memory, pids, cpus, network (none unless given),
 *   allow_host, env ({"NAME": "value"}), files (a folder: read-only at
 *   /grader in the grader's sandbox), layer (auto, bwrap-overlay,
 *   overlayfs, copy).
 * Relative paths are relative to the plan's folder. */
#ifndef TB_PLAN_GRADE_H
#define TB_PLAN_GRADE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/strv.h"

struct plan_grade {
        char *harness;
        struct strv args;
        char *harness_bin, *credentials, *user, *files;    /* paths absolute (harness_bin bare without a '/') */
        char *timeout, *kill_after, *memory, *pids, *cpus; /* the text as given, checked */
        char *network, *layer;
        bool root_session;
        struct strv allow_host;
        struct strv env; /* "NAME=value" (trial/session_env.h: secrets) */
        unsigned slots;  /* job slots it takes: ceil(cpus), at least 1 */
};

/* Parse and check the `grade` object `j`, paths made absolute against
 * `dir`: 0 with *out (malloc'd), or -EINVAL with `field` (the key at fault
 * under grade: "grade.timeout") and `why` what is wrong. */
int plan_grade_parse(json_object *j, const char *dir, struct plan_grade **out, char *field, size_t field_len, char *why,
                     size_t why_len);
void plan_grade_free(struct plan_grade *g);

/* The `trialbox grade` arguments after the program name: "grade",
 * "--trial-dir", OUT, "--repo", REPO, the options, "-q", "--", args...;
 * with `env`, "--env-file env_file" (the batch's pipe: never a value in
 * argv). */
void plan_grade_args(const struct plan_grade *g, const char *trial_dir, const char *repo, const char *env_file,
                     struct strv *out);

#endif
