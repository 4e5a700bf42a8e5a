/* An Experiment's plan: a JSON Lines file, one Trial per line, each the
 * options of one `trialbox run`. Loading validates every line before
 * anything runs; the Trials are then plain data for the batch runner.
 *
 * A line's fields (README "Experiments"): `id` (unique string), `harness`,
 * `output_dir` (unique), `args` (array of strings, default none), exactly one
 * of `repo` (a prepared repository) or `repo_from` ("PATH[@REV]": a fresh
 * clone is made for the Trial at OUTPUT_DIR.repo), and the `run` options
 * `harness_bin`, `skills`, `credentials`, `timeout`, `kill_after` (with
 * timeout), `memory`, `pids`, `cpus`, `user`, `network` (host|none|allow),
 * `allow_host` (array of strings), `harness_endpoints` (false:
 * --no-harness-endpoints), `env` (an object of the session's own variables:
 * trial/session_env.h); an Experiment's `task`, `arm` and `labels` (carried
 * into the results) and `grade` (the Trial's grader). Relative paths are
 * relative to the plan's folder. Blank lines are skipped. */
#ifndef TB_PLAN_H
#define TB_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "base/arena.h"
#include "base/error.h"
#include "base/sha256.h"
#include "base/strv.h"
#include "experiments/plan_grade.h"

/* The longest `task` or `arm` (bytes). */
#define PLAN_NAME_MAX 128

/* Strings in the plan's arena: `n` of them, then NULL. */
struct plan_strings {
        char **v;
        size_t n;
};

/* The fields most lines leave out, kept apart so that a line without any
 * costs one pointer (the plan keeps every line for the whole batch). */
struct plan_trial_more {
        char *repo_rev;   /* the REV of repo_from's "@REV", or NULL (its HEAD) */
        char *harness_bin, *skills, *credentials; /* paths made absolute; harness_bin kept bare when it has no '/' */
        char *timeout, *memory, *pids, *cpus;     /* the text as given (numbers as written), validated */
        char *user, *network;
        char *kill_after;         /* --kill-after's text as given, validated (needs timeout), or NULL */
        struct plan_strings allow_host;
        struct strv env;          /* the session's own variables, "NAME=VALUE" (secrets: never printed;
                                   * malloc'd, erased by plan_done) */
        /* An Experiment's: carried unchanged into the results. */
        char *task, *arm; /* or NULL */
        char *labels;     /* the `labels` object as JSON text (experiments/labels.h), or NULL */
        struct plan_grade *grade; /* its grader (experiments/plan_grade.h; the plan's), or NULL */
};

/* One line. Its strings (and its `more`) are the plan's: in its arena,
 * freed by plan_done, never alone. */
struct plan_trial {
        unsigned line;  /* 1-based line in the plan file */
        unsigned slots; /* job slots it takes: ceil(cpus), at least 1 */
        char *id;
        char *harness;
        char *output_dir; /* absolute, lexically clean */
        char *repo;       /* absolute; NULL with repo_from */
        char *repo_from;  /* absolute path of the source repository; NULL with repo */
        struct plan_strings args;
        char *shared_repo; /* the real path of `repo` when another line names it too, else NULL */
        bool root_session;         /* --root-session */
        bool keep_control_files;   /* --keep-control-files */
        bool no_harness_endpoints; /* harness_endpoints false: --no-harness-endpoints */
        /* The rest of its fields; never NULL (one shared empty record for
         * the lines that give none of them). */
        struct plan_trial_more *more;
        /* SHA-256 (hex) of the line's canonical JSON, keys sorted, without
         * id, output_dir, task, arm, labels, grade and nulls: everything that
         * changes what runs, as written. */
        char fingerprint[SHA256_HEX_LEN + 1];
};

struct plan_grader {
        char key[SHA256_HEX_LEN + 1]; /* SHA-256 (hex) of the `grade` object's JSON text */
        struct plan_grade *grade;
};

struct plan {
        char *path; /* as given, for messages */
        char *file; /* the plan's real path: what the batch names after it (its results, PLAN.slurm-job) */
        char *dir;  /* the plan's folder, absolute: its results go here */
        struct plan_trial *v;
        size_t n;
        struct arena arena; /* the lines' strings and records */
        /* The distinct graders of the lines: a `grade` given as the same
         * text on many lines (an Experiment's task) is parsed once, shared. */
        struct plan_grader *graders;
        size_t n_graders, cap_graders;
        struct strv notes; /* what the plan check says without refusing (Trials sharing a repository) */
};

/* Read and validate PATH. 0, or -EINVAL with err saying
 * "PATH:LINE: field 'X': what is wrong" (or another negative errno when the
 * file cannot be read); nothing is kept on failure.
 *
 * Trials stay independent: two lines with the same id or output folder, an
 * output folder inside another's, and a Trial's output folder (with its
 * clone OUTPUT_DIR.repo and its attempts OUTPUT_DIR.attempt-N) overlapping
 * another line's repository or clone (that session could plant its
 * outcome.json) are refused, naming both lines; so is a repository inside
 * another's. Lines naming the same `repo` are accepted but never run at
 * once: each gets shared_repo, and plan->notes says so (use repo_from to
 * give each its own clone). */
int plan_load(const char *path, struct plan *plan, struct tb_error *err);
void plan_done(struct plan *plan);

/* Where a Trial's clone of repo_from goes (OUTPUT_DIR.repo); malloc'd. */
char *plan_clone_dir(const char *output_dir);

/* The `trialbox run` arguments after the program name for this Trial
 * ("run", "--harness", …, "-q", "--json", "--", args…), the repository
 * being `repo` (the plan's, or the clone); with `env`, "--env-file
 * env_file" (the batch's pipe, /dev/fd/N: never a value in argv). */
void plan_trial_run_args(const struct plan_trial *t, const char *repo, const char *env_file, struct strv *out);

#endif
