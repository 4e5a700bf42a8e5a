/* `trialbox plan`: an Experiment file expanded into a plan
 * (experiments/experiment.h), on stdout or into a file. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/env.h"
#include "base/fileio.h"
#include "base/log.h"
#include "base/path.h"
#include "base/strbuf.h"
#include "cmd/cli.h"
#include "cmd/exit.h"
#include "cmd/options.h"
#include "experiments/experiment.h"

struct plan_args {
        const char *output;
};

static const struct cli_option plan_options[] = {
        { .kind = CLI_STRING,
          .name = "output",
          .short_name = 'o',
          .metavar = "FILE",
          .flags = CLI_ONCE | CLI_NONEMPTY,
          .offset = offsetof(struct plan_args, output),
          .help = "write the plan to FILE (atomically), its paths relative to\n"
                  "FILE's folder; default: stdout, its paths absolute" },
        { .kind = CLI_HELP, .name = "help", .short_name = 'h' },
};

static const struct cli_status plan_statuses[] = {
        { "0", "the plan was written" },
        { "2", "a usage error, or a bad Experiment (FILE: where: what is wrong)" },
        { "126", "the plan cannot be written" },
};

const struct cli_usage cmd_plan_usage = {
        .synopsis = "trialbox plan EXPERIMENT [-o FILE]",
        .description = "Expands an Experiment file (arms × tasks × repetitions, JSON) into a plan for\n"
                       "'trialbox batch': one Trial per line, id TASK/ARM/N, with its task, arm, labels\n"
                       "and grader.\n",
        .options = plan_options,
        .n_options = TB_ARRAY_SIZE(plan_options),
        .statuses = plan_statuses,
        .n_statuses = TB_ARRAY_SIZE(plan_statuses),
};

/* The folder FILE goes to, real: 0, or a usage error (said). */
static int output_folder(const char *file, char **dir)
{
        _cleanup_free_ char *copy = xstrdup(file);
        char *slash = strrchr(copy, '/');
        const char *parent = slash ? (slash == copy ? "/" : (*slash = '\0', copy)) : ".";
        *dir = realpath(parent, NULL);
        if (!*dir)
                return cli_usage_error("plan", "-o '%s': its folder '%s': %s", file, parent, strerror(errno));
        return 0;
}

static int write_plan(const char *file, const char *dir, const struct strbuf *text)
{
        const char *slash = strrchr(file, '/');
        const char *name = slash ? slash + 1 : file;
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int r = dfd < 0 ? -errno : write_file_atomic_at(dfd, name, text->s, text->len, 0644, WRITE_SYNC_FILE);
        if (r < 0)
                return cli_fail(TB_EXIT_ERROR, "cannot write the plan '%s': %s", file, strerror(-r));
        return 0;
}

int cmd_plan(const struct cli_command *self, const struct tb_env *env, int argc, char **argv)
{
        (void)env;
        struct plan_args a = { 0 };
        int first = 0, r = cli_parse(self, argc, argv, &a, &first);
        if (r != 0)
                return r == CLI_HELP_SHOWN ? 0 : r;
        if (argc - first != 1)
                return cli_usage_error(self->name, "plan needs one EXPERIMENT (a JSON file: arms, tasks, repetitions)");
        const char *name = a.output ? strrchr(a.output, '/') : NULL;
        if (a.output && (!(name ? name[1] : a.output[0]) || strcmp(name ? name + 1 : a.output, ".") == 0 ||
                         strcmp(name ? name + 1 : a.output, "..") == 0))
                return cli_usage_error(self->name, "-o '%s' names no file", a.output);
        _cleanup_free_ char *dir = NULL;
        if (a.output && output_folder(a.output, &dir) != 0)
                return TB_EXIT_USAGE;
        struct strbuf text = { 0 };
        _cleanup_strv_ struct strv notes = { 0 };
        struct tb_error err = { 0 };
        strbuf_add(&text, "");
        r = experiment_expand(argv[first], dir, &text, &notes, &err);
        for (size_t i = 0; r == 0 && i < notes.n; i++)
                log_notice("%s", notes.v[i]);
        if (r < 0)
                r = cli_fail(TB_EXIT_USAGE, "%s", err.msg);
        else if (a.output)
                r = write_plan(a.output, dir, &text);
        else if (fwrite(text.s, 1, text.len, stdout) != text.len || fflush(stdout) != 0)
                r = cli_fail(TB_EXIT_ERROR, "cannot write the plan to stdout: %s", strerror(errno));
        free(text.s);
        return r;
}
