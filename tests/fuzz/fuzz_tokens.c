/* libFuzzer target: a Harness plugin's `tokens` hook on a forged home, end
 * to end: the core's services (the newest files, the line reader, json-c's
 * tokenizer, the tally) and the plugin's reading of its CLI's transcript.
 * Built once per plugin (FUZZ_HARNESS "codex" or "claude", its source
 * linked in).
 *
 * The input is the Harness's file (a rollout, a transcript) as the session
 * left it; a form feed pair ("\f\f") starts another file of the same
 * session (at most 4). The promises: reading never fails in a way that
 * crashes, hangs or leaks; the tokens are null or within their bounds
 * (every count 0 to 2^53 - 1, the parts within their whole, at most 8
 * valid model names, the rest counted, the source the plugin's folder);
 * reading the same home twice gives the same tokens; the Outcome with them
 * is one line within its bound. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/tree.h"
#include "model/outcome.h"
#include "plugin/host.h"
#include "plugin/tokens.h"

#define FUZZ_TARGET "fuzz_tokens_" FUZZ_HARNESS
#include "fuzz.h"

#ifndef FUZZ_HARNESS
#error "FUZZ_HARNESS must name the plugin"
#endif

extern const struct tb_harness trialbox_harness;

int LLVMFuzzerInitialize(int *argc, char ***argv);

static char home[64];
static int home_fd = -1;
static char sub[256]; /* where the files go */

static void remove_home(void)
{
        if (home_fd >= 0)
                tree_remove_at(AT_FDCWD, home);
}

/* Where the plugin looks, and where its CLI puts the files there. */
static const char *folder(void) { return strcmp(FUZZ_HARNESS, "codex") == 0 ? ".codex/sessions" : ".claude/projects"; }
static const char *subfolder(void)
{
        return strcmp(FUZZ_HARNESS, "codex") == 0 ? ".codex/sessions/2026/12/02" : ".claude/projects/-work-repo";
}

/* The home, once: in memory (/dev/shm) where there is one; its folders made. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
        (void)argc;
        (void)argv;
        log_set_verbosity(0); /* the warnings a forged home earns, once per input: not the point here */
        struct stat st;
        snprintf(home, sizeof home, "%s/fuzz-tokens-XXXXXX", stat("/dev/shm", &st) == 0 ? "/dev/shm" : "/tmp");
        check(mkdtemp(home) != NULL, "a home");
        home_fd = open(home, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        check(home_fd >= 0, "the home opened");
        atexit(remove_home);
        snprintf(sub, sizeof sub, "%s/%s", home, subfolder());
        for (char *p = sub + strlen(home) + 1; (p = strchr(p, '/')) != NULL; p++) {
                *p = '\0';
                mkdir(sub, 0700);
                *p = '/';
        }
        check(mkdir(sub, 0700) == 0, "the CLI's folder made");
        return 0;
}

/* The input's files, each rewritten; those it does not have, emptied. */
static void write_files(const uint8_t *data, size_t size)
{
        const uint8_t *at = data, *end = data + size;
        for (int i = 0; i < 4; i++) {
                const uint8_t *ff = at && i < 3 ? memmem(at, (size_t)(end - at), "\f\f", 2) : NULL;
                size_t len = at ? (ff ? (size_t)(ff - at) : (size_t)(end - at)) : 0;
                char path[512];
                snprintf(path, sizeof path, "%s/%d.jsonl", sub, i);
                int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
                check(fd >= 0, "a file written");
                check(len == 0 || write(fd, at, len) == (ssize_t)len, "all of it");
                close(fd);
                at = ff ? ff + 2 : NULL;
        }
}

static void check_tokens(const struct trial_tokens *t)
{
        if (!t->known)
                return;
        const long long max = (long long)TB_TOKENS_COUNT_MAX;
        const long long v[] = { t->input, t->cached_input, t->cache_write_input, t->output, t->reasoning, t->requests };
        for (size_t i = 0; i < sizeof v / sizeof *v; i++)
                check(v[i] >= 0 && v[i] <= max, "every count is 0 to 2^53 - 1");
        check(t->cached_input <= t->input, "the cached input is within the input");
        check(t->cache_write_input <= t->input, "the cache writes are within the input");
        check(t->cached_input + t->cache_write_input <= t->input || t->partial,
              "the cache reads and writes are within the input, unless a sum saturated");
        check(t->reasoning <= t->output, "the reasoning is within the output");
        check(t->requests >= 1, "something recorded is at least one response");
        check(t->n_models <= TOKENS_MAX_MODELS, "at most 8 names");
        for (size_t i = 0; i < t->n_models; i++) {
                check(tokens_model_valid(t->models[i]), "every name listed is valid");
                check(i == 0 || strcmp(t->models[i - 1], t->models[i]) < 0, "the names are sorted, each once");
        }
        check(t->models_more >= 0 && t->models_more <= TOKENS_MODELS_SEEN, "the rest counted, bounded");
        char want[64];
        snprintf(want, sizeof want, "~/%s", folder());
        check(strcmp(t->source, want) == 0, "the source is the plugin's folder");
}

static bool same(const struct trial_tokens *a, const struct trial_tokens *b)
{
        if (a->known != b->known || a->input != b->input || a->cached_input != b->cached_input ||
            a->cache_write_input != b->cache_write_input || a->output != b->output || a->reasoning != b->reasoning ||
            a->requests != b->requests || a->n_models != b->n_models || a->models_more != b->models_more ||
            a->partial != b->partial || strcmp(a->source, b->source) != 0)
                return false;
        for (size_t i = 0; i < a->n_models; i++)
                if (strcmp(a->models[i], b->models[i]) != 0)
                        return false;
        return true;
}

static void read_once(struct trial_tokens *t)
{
        struct tb_host host = { .harness = FUZZ_HARNESS, .sandboxed = true, .home_fd = &home_fd };
        host_read_tokens(&host, trialbox_harness.tokens, t);
        host_done(&host);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size > 1 << 20)
                return 0;
        write_files(data, size);
        struct trial_tokens a, b;
        read_once(&a);
        check_tokens(&a);
        read_once(&b);
        check(same(&a, &b), "the same home gives the same tokens");

        struct outcome o = { .harness = FUZZ_HARNESS, .exit_code = 0, .tokens = a };
        char *json = outcome_to_json(&o);
        check(strchr(json, '\n') == NULL, "the Outcome is one line");
        check(strlen(json) < 4096, "the Outcome with its tokens stays small");
        free(json);
        return 0;
}
