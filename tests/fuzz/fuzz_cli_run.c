/* libFuzzer target: `trialbox run`'s argument parser, cli_parse_run().
 *
 * The input is split on NUL bytes into argv[1..] (argv[0] is "run"); one
 * trailing NUL ends the last argument rather than adding an empty one. The
 * parser prints its usage errors and --help: LLVMFuzzerInitialize points the
 * stdio streams stdout and stderr at /dev/null. Only the streams, not file
 * descriptors 1 and 2: libFuzzer keeps its own FILE for its messages and
 * the sanitizers write to fd 2, so crash reports and -print_final_stats=1
 * still show. TRIALBOX_NO_SANDBOX is unset once, so that runs do not depend
 * on the caller's environment. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "model/outcome.h"
#include "trial/trial.h"

#define FUZZ_TARGET "fuzz_cli_run"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
        (void)argc, (void)argv;
        FILE *null_out = fopen("/dev/null", "w");
        if (!null_out) {
                perror("fuzz_cli_run: /dev/null");
                exit(1);
        }
        stdout = null_out; /* glibc's streams are plain variables; its manual allows this */
        stderr = null_out;
        unsetenv("TRIALBOX_NO_SANDBOX");
        return 0;
}

/* Does `p` point into the `len` bytes at `base`? */
static int inside(const char *p, const char *base, size_t len) { return p >= base && p < base + len; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size > 64 * 1024)
                return 0;
        /* The arguments, each NUL-terminated, in one exact allocation. */
        size_t len = size + (size == 0 || data[size - 1] != '\0');
        char *buf = malloc(len);
        if (!buf)
                return 0;
        memcpy(buf, data, size);
        buf[len - 1] = '\0';
        int argc = 1;
        for (size_t i = 0; size && i < len; i++)
                argc += buf[i] == '\0';
        char **argv = calloc((size_t)argc + 1, sizeof *argv);
        if (!argv) {
                free(buf);
                return 0;
        }
        char run[] = "run";
        argv[0] = run;
        for (size_t i = 0, a = 1; size && i < len; i += strlen(buf + i) + 1)
                argv[a++] = buf + i;

        struct trial_options opt;
        memset(&opt, 0xa5, sizeof opt);
        int r = cli_parse_run(argc, argv, &opt);
        check(r == 0 || r == 1 || r == TB_EXIT_USAGE, "the result is 0, 1 or the usage status");
        if (r == 0) {
                check(opt.harness && opt.repo && opt.output_dir, "a runnable request has its three folders");
                const char *given[] = { opt.harness, opt.repo, opt.output_dir, opt.harness_bin, opt.skills,
                                        opt.credentials };
                for (size_t i = 0; i < sizeof given / sizeof *given; i++)
                        check(!given[i] || (inside(given[i], buf, len) && given[i][0]),
                              "each value is a non-empty part of argv");
                check(opt.verbosity >= 0, "verbosity is not negative");
                check(opt.session_args >= argv + 1 && opt.session_args <= argv + argc,
                      "the session arguments are the tail of argv");
                check(opt.session_args[argc - (opt.session_args - argv)] == NULL,
                      "the session arguments end with argv's NULL");
                check(opt.session_args == argv + argc || strcmp(opt.session_args[-1], "--") == 0,
                      "session arguments come only after '--'");
        }
        free(argv);
        free(buf);
        return 0;
}
