/* An Experiment file: arms × tasks × repetitions, expanded by `trialbox
 * plan` into a plan (experiments/plan.h), one Trial per line.
 *
 *   {"output_root": "runs",          the Trials' folders, under the file's folder
 *    "repetitions": 3,               Trials per arm and task (default 1)
 *    "labels": {...},                labels of every Trial (experiments/labels.h)
 *    "description": "...",           for the reader; not used
 *    "arms": [{"name": "a", "harness": "codex", "args": ["exec", "{prompt}"],
 *              ...a plan line's Trial fields..., "labels": {...}}],
 *    "tasks": [{"name": "t", "repo_from": "tasks/t@v1" | "repo": "...",
 *               "prompt": "...", "timeout": ..., "labels": {...},
 *               "grade": {...a plan line's grade...}}]}
 *
 * A plan line per repetition N (1 …), task and arm, in that order (so that
 * a partial run covers every arm alike): id "TASK/ARM/N", task, arm, the
 * labels of the file, the arm and the task together, the arm's fields,
 * the task's repository and limits (a task's limit wins over its arm's),
 * output_dir OUTPUT_ROOT/TASK/ARM/N, and the task's grade. `{prompt}` in
 * an arm's or a grade's args (a whole argument or a part of one) is the
 * task's prompt; nothing else is special, and nothing is escaped: args are
 * an array, never a shell line. Relative paths are relative to the file's
 * folder; in the plan they are relative to the plan's folder, or absolute
 * when the plan goes to stdout. */
#ifndef TB_EXPERIMENT_H
#define TB_EXPERIMENT_H

#include "base/error.h"
#include "base/strbuf.h"
#include "base/strv.h"

#define EXPERIMENT_MAX_ARMS 64
#define EXPERIMENT_MAX_TASKS 10000
#define EXPERIMENT_MAX_REPETITIONS 1000
#define EXPERIMENT_MAX_TRIALS 100000
#define EXPERIMENT_NAME_MAX 64            /* an arm's or a task's name */
#define EXPERIMENT_PROMPT_MAX (256 << 10) /* bytes of a task's prompt */

/* Read the Experiment at `path` and write its plan's lines into `out`;
 * `plan_dir` is the folder the plan goes to (its paths relative to it), or
 * NULL for absolute paths. What is worth saying without refusing (Trials
 * that share a repository) goes to `notes`. 0, or -EINVAL with `err`
 * saying "PATH: where.in.the.file: what is wrong" (another negative errno
 * when the file cannot be read). */
int experiment_expand(const char *path, const char *plan_dir, struct strbuf *out, struct strv *notes,
                      struct tb_error *err);

#endif
