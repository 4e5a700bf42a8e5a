/* Commands timed run by run, in a new random order each round, for
 * figures compared across commands (bench/own-work.sh: a dry run against
 * /bin/true, each about a millisecond; bench/noop-trial.sh: a no-op Trial
 * against the floor and bare bwrap): hyperfine runs each command's runs of
 * a round one after another, and a command's place in the round moved its
 * median by up to 0.19 ms here, for the same command in four places; what
 * ran just before a command moves it too (bench/noop-trial.sh).
 *
 *   interleave ROUNDS WARMUP NAME COMMAND [NAME COMMAND]...
 *
 * COMMAND is its words separated by spaces (no quoting: the bench's paths
 * have none); "{n}" in a word is replaced by the round's number, counted
 * from 0 over the warm-up rounds too (a Trial's new output folder each run:
 * bench/noop-trial.sh). Each round runs every command once, in an order
 * shuffled anew, with stdin, stdout and stderr on /dev/null; WARMUP rounds first,
 * not kept. Prints one line per run, "NAME<TAB>SECONDS<TAB>ROUND" (the
 * format of bench/lib.sh's hf_rounds, with the round: runs of one round are
 * paired), the time from just before the fork to just after the wait; then,
 * untimed, every process the command left behind (this is a subreaper).
 * Exits 1 when a command fails (its name and status on stderr). libc only,
 * with the core's clock (now_us). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h" /* now_us (bench/CMakeLists.txt compiles it in) */

#define MAX_COMMANDS 16
#define MAX_WORDS 1024

struct command {
        const char *name;
        char *argv[MAX_WORDS + 1];
        char *run_argv[MAX_WORDS + 1]; /* argv with "{n}" replaced: a word made (malloc) where it differs */
};

/* c->run_argv: c->argv with every "{n}" replaced by `number`. 0, or -1 when
 * out of memory. */
static int number_words(struct command *c, int number)
{
        char num[16];
        const size_t num_len = (size_t)snprintf(num, sizeof num, "%d", number);
        int i = 0;
        for (; c->argv[i]; i++) {
                if (c->run_argv[i] != c->argv[i])
                        free(c->run_argv[i]);
                c->run_argv[i] = c->argv[i];
                size_t marks = 0;
                for (const char *p = c->argv[i]; (p = strstr(p, "{n}")); p += 3)
                        marks++;
                if (!marks)
                        continue;
                char *w = malloc(strlen(c->argv[i]) + marks * num_len + 1), *out = w;
                if (!w)
                        return -1;
                for (const char *p = c->argv[i];;) {
                        const char *m = strstr(p, "{n}");
                        size_t k = m ? (size_t)(m - p) : strlen(p);
                        memcpy(out, p, k);
                        out += k;
                        if (!m)
                                break;
                        memcpy(out, num, num_len);
                        out += num_len;
                        p = m + 3;
                }
                *out = '\0';
                c->run_argv[i] = w;
        }
        c->run_argv[i] = NULL;
        return 0;
}

static int split(char *line, char **argv)
{
        int n = 0;
        for (char *save = NULL, *w = strtok_r(line, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
                if (n == MAX_WORDS)
                        return -1;
                argv[n++] = w;
        }
        argv[n] = NULL;
        return n;
}

/* Spawn, wait: the microseconds between, or -1 when it did not exit 0. */
static long long run(struct command *c, int number, int null)
{
        if (number_words(c, number) < 0) {
                fprintf(stderr, "interleave: %s: out of memory\n", c->name);
                return -1;
        }
        long long t0 = now_us();
        pid_t pid = fork();
        if (pid == 0) {
                dup2(null, 0);
                dup2(null, 1);
                dup2(null, 2);
                execvp(c->run_argv[0], c->run_argv);
                _exit(127);
        }
        int status;
        if (pid < 0 || waitpid(pid, &status, 0) != pid) {
                fprintf(stderr, "interleave: %s: %s: %m\n", c->name, pid < 0 ? "fork" : "waitpid");
                return -1;
        }
        long long t1 = now_us();
        /* Untimed: what the command left running (bwrap's sandbox, its
         * pid 1, outlives a bare bwrap by some 0.3 ms, tearing down its
         * namespaces) comes here, this being a subreaper, and is waited
         * for, so that it never runs into the next command's time. */
        while (waitpid(-1, NULL, 0) > 0) {
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "interleave: %s: %s %d\n", c->name, WIFEXITED(status) ? "exit status" : "signal",
                        WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
                return -1;
        }
        return t1 - t0;
}

int main(int argc, char **argv)
{
        if (argc < 5 || (argc - 3) % 2 != 0 || (argc - 3) / 2 > MAX_COMMANDS) {
                fprintf(stderr, "usage: interleave ROUNDS WARMUP NAME COMMAND [NAME COMMAND]... (at most %d)\n",
                        MAX_COMMANDS);
                return 2;
        }
        int rounds = atoi(argv[1]), warmup = atoi(argv[2]), n = (argc - 3) / 2;
        static struct command cmds[MAX_COMMANDS];
        for (int i = 0; i < n; i++) {
                cmds[i].name = argv[3 + 2 * i];
                if (split(argv[4 + 2 * i], cmds[i].argv) <= 0) {
                        fprintf(stderr, "interleave: %s: no command, or more than %d words\n", cmds[i].name, MAX_WORDS);
                        return 2;
                }
        }
        if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
                perror("interleave: PR_SET_CHILD_SUBREAPER");
                return 1;
        }
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null < 0) {
                perror("interleave: /dev/null");
                return 1;
        }
        srand((unsigned)now_us());
        int order[MAX_COMMANDS];
        long long took[MAX_COMMANDS];
        for (int r = -warmup; r < rounds; r++) {
                for (int i = 0; i < n; i++)
                        order[i] = i;
                for (int i = n - 1; i > 0; i--) { /* Fisher-Yates */
                        int j = rand() % (i + 1), k = order[i];
                        order[i] = order[j];
                        order[j] = k;
                }
                for (int i = 0; i < n; i++) {
                        took[order[i]] = run(&cmds[order[i]], r + warmup, null);
                        if (took[order[i]] < 0)
                                return 1;
                }
                for (int i = 0; r >= 0 && i < n; i++)
                        printf("%s\t%.9f\t%d\n", cmds[i].name, (double)took[i] / 1e6, r);
        }
        return fflush(stdout) == 0 ? 0 : 1;
}
