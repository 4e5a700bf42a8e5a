#define _GNU_SOURCE
#include "trial/grade.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/env.h"
#include "base/fileio.h"
#include "base/io.h"
#include "base/log.h"
#include "model/grade.h"
#include "model/outcome.h"

#define GRADE_FOLDER "grade"
#define GRADE_RECORD "grade.json"

/* A record in `dirfd` (ours: the graded Trial's, the grader's), a regular
 * file read without following a link; NULL when there is none. */
static json_object *read_record(int dirfd, const char *name)
{
        _cleanup_free_ char *text = NULL;
        if (dirfd < 0 || read_full_file_at(dirfd, name, 1 << 20, READ_NOFOLLOW | READ_REGULAR | READ_NONBLOCK, &text,
                                           NULL, NULL) < 0)
                return NULL;
        json_object *j = json_tokener_parse(text);
        if (j && !json_object_is_type(j, json_type_object)) {
                json_object_put(j);
                return NULL;
        }
        return j;
}

/* The graded Trial's outcome ("completed" or "failed") into `kind`; 0, or
 * TB_EXIT_USAGE (said). */
static int graded_kind(int dfd, const char *dir, char *kind, size_t n)
{
        json_object *rec = read_record(dfd, "outcome.json"), *v = NULL;
        const char *k = rec && json_object_object_get_ex(rec, "outcome", &v) && json_object_is_type(v, json_type_string)
                                ? json_object_get_string(v)
                                : NULL;
        int r = TB_EXIT_USAGE;
        if (!k)
                log_error("'%s' holds no Trial's outcome.json; pass a Trial's output folder with --trial-dir", dir);
        else if (strcmp(k, "completed") != 0 && strcmp(k, "failed") != 0)
                log_error("the Trial in '%s' is %s: a grader runs only after a Trial that completed or failed", dir, k);
        else
                r = snprintf(kind, n, "%s", k) < 0 ? TB_EXIT_USAGE : 0;
        json_object_put(rec);
        return r;
}

/* An earlier grade (TRIAL_DIR/grade, grade.json) moved aside to
 * grade.attempt-N, grade.json inside it. 0 or a negative errno. */
static int set_aside(int dfd)
{
        struct stat st;
        bool folder = fstatat(dfd, GRADE_FOLDER, &st, AT_SYMLINK_NOFOLLOW) == 0;
        bool record = fstatat(dfd, GRADE_RECORD, &st, AT_SYMLINK_NOFOLLOW) == 0;
        if (!folder && !record)
                return 0;
        char aside[64];
        for (unsigned n = 1;; n++) {
                snprintf(aside, sizeof aside, GRADE_FOLDER ".attempt-%u", n);
                if (fstatat(dfd, aside, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        break;
        }
        if (folder ? renameat2(dfd, GRADE_FOLDER, dfd, aside, RENAME_NOREPLACE) < 0 : mkdirat(dfd, aside, 0700) < 0)
                return -errno;
        if (!record)
                return 0;
        _cleanup_close_ int afd = openat(dfd, aside, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (afd < 0 || renameat(dfd, GRADE_RECORD, afd, GRADE_RECORD) < 0)
                return -errno;
        return 0;
}

/* The verdict file the grader may have written, read through the verdict
 * folder's fd (opened before its session): a regular file, not a link,
 * never waited on, at most GRADE_VERDICT_MAX bytes. */
static enum grade_verdict_state read_verdict(int vfd, struct grade_verdict *v, char *why, size_t n)
{
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        if (vfd < 0)
                return VERDICT_NONE;
        int r = read_full_file_at(vfd, GRADER_VERDICT_FILE, GRADE_VERDICT_MAX,
                                  READ_NOFOLLOW | READ_REGULAR | READ_NONBLOCK, &text, &len, NULL);
        if (r == -ENOENT)
                return VERDICT_NONE;
        if (r < 0) {
                snprintf(why, n, "%s",
                         r == -EFBIG    ? "larger than 65536 bytes"
                         : r == -ELOOP  ? "a symbolic link, not a file"
                         : r == -EISDIR ? "a folder, not a file"
                         : r == -EINVAL ? "not a regular file"
                                        : strerror(-r));
                return VERDICT_MALFORMED;
        }
        return grade_verdict_parse(text, len, v, why, n) < 0 ? VERDICT_MALFORMED : VERDICT_OK;
}

static int exit_status(const struct grade *g)
{
        switch (g->status) {
        case GRADE_PASSED:
                return GRADE_EXIT_PASSED;
        case GRADE_FAILED:
                return GRADE_EXIT_FAILED;
        case GRADE_ERROR:
                return GRADE_EXIT_ERROR;
        default:
                return TB_EXIT_VOID;
        }
}

/* grade.json written, said, printed: the exit status. */
static int finish(const struct grade_options *opt, int dfd, struct grade *g)
{
        struct tb_error err = { 0 };
        if (grade_write_at(g, dfd, GRADE_RECORD, &err) < 0) {
                log_error("%s in '%s'", err.msg, opt->trial_dir);
                return TB_EXIT_ERROR;
        }
        if (opt->json) {
                json_object *j = grade_to_json(g);
                fflush(stdout);
                printf("%s\n",
                       json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
                fflush(stdout);
                json_object_put(j);
        }
        if (g->status == GRADE_VOID || g->status == GRADE_ERROR)
                log_error("grade: %s (%s): %s", grade_status_name(g->status), g->cause ? g->cause : "-", g->detail);
        else
                log_notice("grade: %s: %s (layer %s); see %s/%s", grade_status_name(g->status), g->detail,
                           g->layer ? g->layer : "none", opt->trial_dir, GRADE_RECORD);
        return exit_status(g);
}

/* What keeps a grader from starting before its Trial does: void. */
static const char *cannot_start(const struct grade_options *opt, const struct tb_env *env, char *detail, size_t n)
{
        struct stat st;
        if (env->no_sandbox && *env->no_sandbox && strcmp(env->no_sandbox, "0") != 0) {
                snprintf(detail, n,
                         "a grader needs the sandbox (its copy-on-write layer) and TRIALBOX_NO_SANDBOX "
                         "is set; unset it");
                return "sandbox_unavailable";
        }
        int e = stat(opt->run.repo, &st) < 0 ? errno : !S_ISDIR(st.st_mode) ? ENOTDIR : 0;
        if (e) {
                snprintf(detail, n, "the Trial's repository '%s' is gone (%s); put it back and grade again",
                         opt->run.repo, strerror(e));
                return "repository_gone";
        }
        return NULL;
}

/* Run the grader's Trial in TRIAL_DIR/grade and decide. */
static void run_grader(struct grade_options *opt, const struct tb_env *env, int dfd, const char *kind, struct grade *g)
{
        _cleanup_free_ char *out = xasprintf("%s/%s", opt->trial_dir, GRADE_FOLDER);
        _cleanup_close_ int gfd = -1;
        if (mkdirat(dfd, GRADE_FOLDER, 0700) == 0)
                gfd = openat(dfd, GRADE_FOLDER, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (gfd < 0) {
                char d[512];
                snprintf(d, sizeof d, "cannot make the grader's folder '%s': %s", out, strerror(errno));
                grade_set_void(g, "session_unavailable", d);
                return;
        }
        opt->run.output_dir = out;
        opt->run.grader = &opt->grader;
        opt->grader.trial_outcome = kind;
        int status = trial_run(&opt->run, env);
        json_object *rec = read_record(gfd, "outcome.json");
        struct grade_verdict v;
        char why[256] = "";
        enum grade_verdict_state state = read_verdict(opt->grader.verdict_fd, &v, why, sizeof why);
        grade_decide(g, rec, state, &v, why);
        if (!rec && status == TB_EXIT_USAGE)
                grade_set_void(g, "session_unavailable",
                               "the grader could not start: its Trial was refused (its "
                               "error is in the grader's log)");
        json_object_put(rec);
        if (opt->grader.layer_used != COW_AUTO)
                g->layer = cow_layer_name(opt->grader.layer_used);
}

int trial_grade(struct grade_options *opt, const struct tb_env *env)
{
        _cleanup_close_ int dfd = open(opt->trial_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0) {
                log_error("the Trial's folder '%s': %s; pass its output folder with --trial-dir", opt->trial_dir,
                          strerror(errno));
                return TB_EXIT_USAGE;
        }
        char kind[16];
        int r = graded_kind(dfd, opt->trial_dir, kind, sizeof kind);
        if (r != 0)
                return r;
        /* One grade of a Trial at a time: a second waits. */
        if (RETRY_EINTR(flock(dfd, LOCK_EX)) < 0 || (r = set_aside(dfd)) < 0) {
                log_error("cannot set the earlier grade in '%s' aside: %s", opt->trial_dir,
                          strerror(r < 0 ? -r : errno));
                return TB_EXIT_ERROR;
        }
        struct grade g = { .exit_code = -1, .duration_ms = -1, .harness = opt->run.harness };
        char detail[1024];
        const char *cause = cannot_start(opt, env, detail, sizeof detail);
        if (cause)
                grade_set_void(&g, cause, detail);
        else
                run_grader(opt, env, dfd, kind, &g);
        int status = finish(opt, dfd, &g);
        grade_done(&g);
        tb_closep(&opt->grader.verdict_fd);
        return status;
}
