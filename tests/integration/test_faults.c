/* Fault injection: trialbox and `trialbox credentials set` killed with
 * SIGKILL at random moments, and an output folder on a full or read-only
 * filesystem. What must hold each time: a secret file is the old version or
 * the new one, whole, with its mode; no temporary file readable by others is
 * left; a failure is one line on stderr with a documented exit status.
 *
 * The iteration counts and the random seed can be set from the environment:
 *   TB_FAULT_ITERATIONS        `credentials set` kills (default 300)
 *   TB_FAULT_MAX_DELAY_US      longest wait before such a kill (default: 1.5 times
 *                              an unhurried run, measured first)
 *   TB_FAULT_LOGIN_ITERATIONS  trialbox kills during login write-backs (default 60)
 *   TB_FAULT_LOGIN_SIZE        size of each login version (default 262144)
 *   TB_FAULT_SANDBOX_ITERATIONS trialbox kills while a Trial starts (default 40)
 *   TB_FAULT_RECORD_ITERATIONS trialbox kills while a Trial writes its first record (default 40)
 *   TB_FAULT_SEED              the random seed (default: the time; printed)
 * Each test prints its figures on stdout (they go into docs/reliability.md). */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "logins/credentials.h"
#include "tb_test.h"
#include "base/util.h"

/* ---- small helpers ---- */

/* Print a line of figures now (a failing check ends the process). */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        fflush(stdout);
}

static long env_long(const char *name, long def)
{
        const char *v = getenv(name);
        if (!v || !*v)
                return def;
        char *end;
        long n = strtol(v, &end, 10);
        return *end == '\0' && n >= 0 ? n : def;
}

static uint64_t rng_state;

static void rng_seed(const char *what)
{
        const char *given = getenv("TB_FAULT_SEED");
        uint64_t seed = given && *given ? strtoull(given, NULL, 10) : 0;
        if (!seed) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                seed = (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec ^ (uint64_t)getpid();
        }
        rng_state = seed ? seed : 1;
        say("%s: seed %" PRIu64 " (TB_FAULT_SEED=%" PRIu64 " draws the same delays again)\n", what, seed, seed);
}

static uint64_t rng(void)
{
        /* xorshift64*: enough to spread kills over time. */
        rng_state ^= rng_state >> 12;
        rng_state ^= rng_state << 25;
        rng_state ^= rng_state >> 27;
        return rng_state * 2685821657736338717ull;
}

/* Wait up to `ms` for every process with `marker` to be gone; kill (by pid)
 * whatever is left. Returns how many had to be killed. */
static size_t reap_leftovers(const char *marker, int ms)
{
        pid_t pids[64];
        size_t n = 0;
        for (int waited = 0; waited <= ms; waited += 5) {
                n = host_pids(marker, NULL, NULL, pids, 64);
                if (n == 0)
                        return 0;
                sleep_us(5000);
        }
        n = n < 64 ? n : 64;
        for (size_t i = 0; i < n; i++) {
                char path[64], comm[64] = "?";
                snprintf(path, sizeof path, "/proc/%d/stat", (int)pids[i]);
                _cleanup_free_ char *stat_line = read_text(path);
                if (stat_line)
                        snprintf(comm, sizeof comm, "%.60s", stat_line);
                say("  outlived trialbox: %s\n", comm);
                kill(pids[i], SIGKILL);
        }
        return n;
}


/* ---- credentials set, killed ---- */

#define CRED_MAX_VALUE (64 * 1024)

static int cmp_long(const void *a, const void *b)
{
        long x = *(const long *)a, y = *(const long *)b;
        return (x > y) - (x < y);
}

/* How long an unhurried `credentials set` of a 64 KiB value takes here, in
 * microseconds (the median of five runs, times 1.5): kills are spread over
 * that, so some land before the save, some in it, some after. */
static long calibrate_set(const char *dir)
{
        _cleanup_free_ char *path = xasprintf("%s/calibrate/credentials.json", dir);
        _cleanup_free_ char *value_file = xasprintf("%s/calibrate-value", dir);
        char *value = xmalloc(CRED_MAX_VALUE + 1);
        memset(value, 'c', CRED_MAX_VALUE);
        value[CRED_MAX_VALUE] = '\0';
        write_text(value_file, value, 0600);
        free(value);
        long runs[5];
        for (int i = 0; i < 5; i++) {
                char *argv[] = { TRIALBOX_BIN, "credentials", "--credentials", path, "set", "calibrate.key", NULL };
                struct timespec a, b;
                clock_gettime(CLOCK_MONOTONIC, &a);
                pid_t pid = spawn(NULL, argv, &(struct tb_spawn_io){ .in = value_file, .out = "/dev/null", .err = "/dev/null" });
                ck_assert_int_eq(wait_status(pid), 0);
                clock_gettime(CLOCK_MONOTONIC, &b);
                runs[i] = (long)((b.tv_sec - a.tv_sec) * 1000000 + (b.tv_nsec - a.tv_nsec) / 1000);
        }
        qsort(runs, 5, sizeof *runs, cmp_long);
        say("credentials set: an uninterrupted run takes %ld us here (median of 5); kills come 0-%ld us after "
            "the start\n",
            runs[2], runs[2] * 3 / 2);
        return runs[2] * 3 / 2;
}

START_TEST(credentials_set_killed_at_random_moments_leaves_the_old_or_the_new_value)
{
        const long iterations = env_long("TB_FAULT_ITERATIONS", 300);
        rng_seed("credentials set");
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        _cleanup_free_ char *cfg = xasprintf("%s/cfg/trialbox", dir);
        _cleanup_free_ char *path = xasprintf("%s/credentials.json", cfg);
        _cleanup_free_ char *value_file = xasprintf("%s/value", dir);
        _cleanup_free_ char *err_file = xasprintf("%s/stderr", dir);
        /* Kills spread over a whole run: how long does one take here, with the largest value? */
        const long max_delay =
                env_long("TB_FAULT_MAX_DELAY_US", -1) >= 0 ? env_long("TB_FAULT_MAX_DELAY_US", 0) : calibrate_set(dir);
        char *committed = NULL; /* what the file holds for fault.key; NULL before any save */
        char *value = xmalloc(CRED_MAX_VALUE + 2);
        long parsed = 0, old = 0, fresh = 0, absent = 0, finished = 0;

        for (long i = 0; i < iterations; i++) {
                /* Short values too: a quarter of them under 64 bytes. */
                size_t len = 1 + (size_t)(rng() % (i % 4 == 0 ? 64 : CRED_MAX_VALUE));
                int pre = snprintf(value, 32, "v%ld-", i);
                if ((size_t)pre > len)
                        len = (size_t)pre;
                memset(value + pre, 'a' + (int)(i % 26), len - (size_t)pre);
                value[len] = '\n';
                value[len + 1] = '\0';
                write_text(value_file, value, 0600);
                value[len] = '\0';

                char *argv[] = { TRIALBOX_BIN, "credentials", "--credentials", path, "set", "fault.key", NULL };
                pid_t pid = spawn(NULL, argv, &(struct tb_spawn_io){ .in = value_file, .out = "/dev/null", .err = err_file });
                long delay = max_delay ? (long)(rng() % (uint64_t)(max_delay + 1)) : 0;
                if (delay)
                        sleep_us(delay);
                kill(pid, SIGKILL);
                int status = wait_status(pid);
                _cleanup_free_ char *err_text = read_text(err_file);
                ck_assert_msg(status == 0 || status == 128 + SIGKILL, "iteration %ld: credentials set exited %d: %s", i,
                              status, err_text ? err_text : "");
                if (status == 0)
                        finished++;

                struct stat st;
                if (lstat(path, &st) < 0) {
                        ck_assert_msg(errno == ENOENT, "iteration %ld: '%s': %s", i, path, strerror(errno));
                        ck_assert_msg(committed == NULL, "iteration %ld: the Credentials file vanished", i);
                        ck_assert_msg(status != 0, "iteration %ld: set exited 0 but saved nothing", i);
                        absent++;
                        continue;
                }
                ck_assert_msg(S_ISREG(st.st_mode), "iteration %ld: the Credentials file is not a regular file", i);
                ck_assert_msg((st.st_mode & 07777) == 0600, "iteration %ld: the Credentials file has mode %04o", i,
                              (unsigned)(st.st_mode & 07777));
                struct credentials *c = NULL;
                struct tb_error e = { 0 };
                int r = credentials_load(path, &c, &e);
                ck_assert_msg(r == 0, "iteration %ld (value of %zu bytes, killed after %ld us): does not parse: %s", i,
                              len, delay, e.msg);
                parsed++;
                const char *got = credentials_get(c, "fault", "key");
                ck_assert_msg(got != NULL, "iteration %ld: the file parses but holds no fault.key", i);
                struct strv names = { 0 };
                credentials_names(c, &names);
                ck_assert_msg(names.n == 1 && strcmp(names.v[0], "fault.key") == 0,
                              "iteration %ld: the file holds %zu names", i, names.n);
                strv_done(&names);
                if (strcmp(got, value) == 0) {
                        fresh++;
                        free(committed);
                        committed = xstrdup(value);
                } else {
                        ck_assert_msg(committed && strcmp(got, committed) == 0,
                                      "iteration %ld: fault.key holds neither the old nor the new value (%zu bytes)", i,
                                      strlen(got));
                        ck_assert_msg(status != 0, "iteration %ld: set exited 0 but the old value is still there", i);
                        old++;
                }
                credentials_free(c);
        }

        /* What a kill can leave: temporary files beside the file, 0600 and ours. */
        long leftovers = 0;
        DIR *d = opendir(cfg);
        ck_assert_msg(d != NULL || absent == iterations, "'%s' cannot be read", cfg);
        struct dirent *de;
        while (d && (de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
                    strcmp(de->d_name, "credentials.json") == 0)
                        continue;
                _cleanup_free_ char *p = xasprintf("%s/%s", cfg, de->d_name);
                struct stat st;
                ck_assert_int_eq(lstat(p, &st), 0);
                ck_assert_msg(str_has_prefix(de->d_name, ".credentials.json.tmp-"), "a stray file '%s'", p);
                ck_assert_msg(S_ISREG(st.st_mode) && (st.st_mode & 077) == 0 && st.st_uid == geteuid(),
                              "leftover '%s' has mode %04o, uid %u: readable by others", p,
                              (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid);
                leftovers++;
        }
        if (d) {
                closedir(d);
                struct stat st;
                ck_assert_int_eq(stat(cfg, &st), 0);
                ck_assert_msg((st.st_mode & 077) == 0, "the Credentials folder has mode %04o",
                              (unsigned)(st.st_mode & 07777));
        }
        say("credentials set: %ld kills, %ld files parsed, %ld old, %ld new, %ld leftovers "
            "(%ld runs had finished before their kill, %ld kills before the first save)\n",
            iterations, parsed, old, fresh, leftovers, finished, absent);
        ck_assert_int_eq(parsed + absent, iterations);
        free(committed);
        free(value);
}
END_TEST

/* ---- trialbox killed during a login write-back ---- */

/* Login version n: "%08d\n" repeated, cut at `size` bytes (as `yes | head -c`). */
static char *login_version(unsigned long n, size_t size)
{
        char *buf = xmalloc(size + 1), unit[16];
        snprintf(unit, sizeof unit, "%08lu\n", n);
        for (size_t i = 0; i < size; i++)
                buf[i] = unit[i % 9];
        buf[size] = '\0';
        return buf;
}

/* The version a login file holds, when it is exactly one whole version;
 * else -1 and `why` says what is wrong. */
static long login_version_of(const char *path, size_t size, char *why, size_t cap)
{
        size_t len = 0;
        _cleanup_free_ char *text = read_all(path, &len, true);
        if (!text) {
                snprintf(why, cap, "cannot read it: %s", strerror(errno));
                return -1;
        }
        if (len != size) {
                snprintf(why, cap, "%zu bytes, not %zu: partial", len, size);
                return -1;
        }
        char *end;
        unsigned long n = strtoul(text, &end, 10);
        if (end != text + 8 || *end != '\n') {
                snprintf(why, cap, "it does not start with a version number");
                return -1;
        }
        _cleanup_free_ char *want = login_version(n, size);
        if (memcmp(text, want, size) != 0) {
                size_t at = 0;
                while (at < size && text[at] == want[at])
                        at++;
                snprintf(why, cap, "version %lu up to byte %zu, then something else: mixed", n, at);
                return -1;
        }
        return (long)n;
}

START_TEST(trialbox_killed_during_login_write_backs_leaves_the_host_login_whole)
{
        const long iterations = env_long("TB_FAULT_LOGIN_ITERATIONS", 60);
        const size_t size = (size_t)env_long("TB_FAULT_LOGIN_SIZE", 256 * 1024);
        ck_assert_msg(size >= 16, "TB_FAULT_LOGIN_SIZE must be at least 16");
        rng_seed("login write-back");
        struct fixture f;
        fixture_new(&f);
        _cleanup_free_ char *codex_home = xasprintf("%s/codex-home", f.dir);
        _cleanup_free_ char *auth = xasprintf("%s/auth.json", codex_home);
        _cleanup_free_ char *env_home = xasprintf("CODEX_HOME=%s", codex_home);
        _cleanup_free_ char *outp = xasprintf("%s/stdout", f.dir), *errp = xasprintf("%s/stderr", f.dir);
        _cleanup_free_ char *size_arg = xasprintf("%zu", size);
        _cleanup_free_ char *m = marker("fault-login");
        ck_assert_int_eq(mkdir(codex_home, 0700), 0);
        {
                _cleanup_free_ char *v0 = login_version(0, size);
                write_text(auth, v0, 0600);
        }
        long prev = 0, advanced = 0, during = 0, anytime = 0, copies_left = 0, orphans = 0, max_version = 0;
        long long started_ms = now_ms();

        for (long i = 0; i < iterations; i++) {
                struct fixture g = f;
                snprintf(g.out, sizeof g.out, "%s/out-%ld", f.dir, i);
                char *argv[64];
                tb_argv(argv, 64, "codex", &g,
                        EXTRA("--harness-bin", FAKE("fault-codex-rewriter"), "--", size_arg, "30", m));
                struct stat st0;
                ck_assert_int_eq(stat(auth, &st0), 0);
                pid_t pid = spawn_argv(tb_env(ENV(env_home)), argv, outp, errp);

                long delay;
                if (i % 2 == 0) {
                        /* Once write-backs are under way (the host file is replaced). */
                        during++;
                        struct stat st;
                        int w;
                        for (int waited = 0;; waited++) {
                                if (stat(auth, &st) == 0 && st.st_ino != st0.st_ino)
                                        break;
                                pid_t done = waitpid(pid, &w, WNOHANG);
                                if (done == pid || waited > 20000) {
                                        if (done != pid)
                                                kill(pid, SIGKILL);
                                        _cleanup_free_ char *e = read_text(errp);
                                        reap_leftovers(m, 2000);
                                        ck_abort_msg("iteration %ld: no write-back reached the host (trialbox %s): %s",
                                                     i, done == pid ? "ended" : "still running", e ? e : "");
                                }
                                sleep_us(500);
                        }
                        delay = (long)(rng() % 20000);
                } else {
                        /* At any moment from the start: set-up, copy, session, write-backs. */
                        anytime++;
                        delay = (long)(rng() % 80000);
                }
                sleep_us(delay);
                kill(pid, SIGKILL);
                int status = wait_status(pid);
                if (status != 128 + SIGKILL) {
                        _cleanup_free_ char *e = read_text(errp);
                        reap_leftovers(m, 2000);
                        ck_abort_msg("iteration %ld: trialbox ended with %d before its kill: %s", i, status,
                                     e ? e : "");
                }

                /* Nothing writes the host file once trialbox is gone. */
                char why[200];
                long v = login_version_of(auth, size, why, sizeof why);
                if (v < 0)
                        reap_leftovers(m, 2000);
                ck_assert_msg(v >= 0, "iteration %ld (killed %ld us after %s): the host login is not whole: %s", i,
                              delay, i % 2 == 0 ? "the first write-back" : "the start", why);
                ck_assert_msg(v >= prev, "iteration %ld: the host login went back from version %ld to %ld", i, prev, v);
                struct stat st;
                ck_assert_int_eq(stat(auth, &st), 0);
                ck_assert_msg((st.st_mode & 07777) == 0600, "iteration %ld: the host login has mode %04o", i,
                              (unsigned)(st.st_mode & 07777));
                if (v > prev)
                        advanced++;
                prev = v;
                if (v > max_version)
                        max_version = v;

                /* Sessions outliving trialbox are counted here; they are the
                 * subject of trialbox_killed_at_random_moments_leaves_no_sandbox_running. */
                size_t left = reap_leftovers(m, 500);
                if (left)
                        say("  iteration %ld: %zu session processes outlived trialbox (killed %ld us after %s)\n", i,
                            left, delay, i % 2 == 0 ? "the first write-back" : "the start");
                orphans += (long)left;

                /* SIGKILL leaves the private copy (the session's own file by
                 * then, written 0600 as Codex does): it must still be private. */
                _cleanup_free_ char *copy = xasprintf("%s/home/.codex/auth.json", g.out);
                _cleanup_free_ char *copy_dir = xasprintf("%s/home/.codex", g.out);
                if (lstat(copy, &st) == 0) {
                        copies_left++;
                        ck_assert_msg((st.st_mode & 077) == 0, "iteration %ld: the private copy has mode %04o", i,
                                      (unsigned)(st.st_mode & 07777));
                        ck_assert_int_eq(stat(copy_dir, &st), 0);
                        ck_assert_msg((st.st_mode & 077) == 0, "iteration %ld: the copy's folder has mode %04o", i,
                                      (unsigned)(st.st_mode & 07777));
                }
                tmpdir_remove(g.out);
        }

        /* What a kill can leave beside the host login: trialbox's temporary files. */
        long leftovers = 0;
        DIR *d = opendir(codex_home);
        ck_assert_ptr_nonnull(d);
        struct dirent *de;
        while ((de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
                    strcmp(de->d_name, "auth.json") == 0)
                        continue;
                _cleanup_free_ char *p = xasprintf("%s/%s", codex_home, de->d_name);
                struct stat st;
                ck_assert_int_eq(lstat(p, &st), 0);
                ck_assert_msg(str_has_prefix(de->d_name, ".auth.json.tmp-"), "a stray file '%s' beside the host login",
                              p);
                ck_assert_msg(S_ISREG(st.st_mode) && (st.st_mode & 077) == 0,
                              "leftover '%s' has mode %04o: readable by others", p, (unsigned)(st.st_mode & 07777));
                leftovers++;
        }
        closedir(d);
        say("login write-back: %ld kills of trialbox (%ld after the first write-back, %ld at any moment), "
            "%ld host logins whole, %ld advanced, last version %ld, %ld leftovers beside the host login (none "
            "readable by others), %ld private copies left in output folders (none readable by others), "
            "%ld sessions outlived trialbox, %lld ms\n",
            iterations, during, anytime, iterations, advanced, max_version, leftovers, copies_left, orphans,
            now_ms() - started_ms);
        fixture_free(&f);
}
END_TEST

/* trialbox killed at random moments of a Trial's start and run: nothing of
 * the sandbox may outlive it (README: "If trialbox itself is killed,
 * --die-with-parent ends the sandbox"). */
START_TEST(trialbox_killed_at_random_moments_leaves_no_sandbox_running)
{
        const long iterations = env_long("TB_FAULT_SANDBOX_ITERATIONS", 40);
        rng_seed("sandbox kills");
        struct fixture f;
        fixture_new(&f);
        _cleanup_free_ char *m = marker("fault-sandbox");
        _cleanup_free_ char *outp = xasprintf("%s/stdout", f.dir), *errp = xasprintf("%s/stderr", f.dir);
        long survived = 0, processes = 0;
        struct strbuf which = { 0 };

        for (long i = 0; i < iterations; i++) {
                struct fixture g = f;
                snprintf(g.out, sizeof g.out, "%s/out-%ld", f.dir, i);
                char *argv[64];
                /* sh -c SCRIPT MARKER: the marker is the session's $0, on its command line. */
                tb_argv(argv, 64, "shell", &g, EXTRA("--", "-c", "sleep 20", m));
                pid_t pid = spawn_argv(tb_env(NULL), argv, outp, errp);
                long delay = (long)(rng() % 60000);
                sleep_us(delay);
                kill(pid, SIGKILL);
                int status = wait_status(pid);
                ck_assert_msg(status == 128 + SIGKILL, "iteration %ld: trialbox ended with %d before its kill", i,
                              status);
                size_t left = reap_leftovers(m, 500);
                if (left) {
                        survived++;
                        processes += (long)left;
                        strbuf_addf(&which, "%s%ld us", which.len ? ", " : "", delay);
                }
                tmpdir_remove(g.out);
        }
        say("sandbox kills: %ld kills of trialbox 0-60 ms after its start, %ld left a sandbox running (%ld "
            "processes)%s%s\n",
            iterations, survived, processes, survived ? ", killed after: " : "", which.s ? which.s : "");
        fixture_free(&f);
        ck_assert_msg(survived == 0,
                      "%ld of %ld kills left sandbox processes running (killed after %s): see "
                      "a_sandbox_still_starting_when_trialbox_is_killed_never_runs_its_session, and bubblewrap's own "
                      "race (containers/bubblewrap#633)",
                      survived, iterations, which.s);
        free(which.s);
}
END_TEST

/* One of the windows the random kills above hit, made wide and certain: a
 * bwrap that takes half a second to start. trialbox killed while it starts must
 * still take the sandbox with it (README: "If trialbox itself is killed,
 * --die-with-parent ends the sandbox"): the session must never run. */
START_TEST(a_sandbox_still_starting_when_trialbox_is_killed_never_runs_its_session)
{
        struct fixture f;
        fixture_new(&f);
        _cleanup_free_ char *m = marker("fault-slow-bwrap");
        _cleanup_free_ char *ran = xasprintf("%s/RAN", f.repo);
        _cleanup_free_ char *outp = xasprintf("%s/stdout", f.dir), *errp = xasprintf("%s/stderr", f.dir);
        char *argv[64];
        /* sh -c SCRIPT MARKER: the marker is the session's $0, on its command line. */
        tb_argv(argv, 64, "shell", &f, EXTRA("--", "-c", "touch RAN; sleep 5", m));
        pid_t pid = spawn_argv(tb_env(ENV("TRIALBOX_BWRAP=" FAKE("fault-slow-bwrap"))), argv, outp, errp);
        /* trialbox, then the slow bwrap it forked, both carry the marker. */
        pid_t pids[8];
        bool forked = false;
        for (int waited = 0; waited < 10000 && !forked; waited += 2) {
                forked = host_pids(m, NULL, NULL, pids, 8) >= 2;
                if (!forked)
                        sleep_us(2000);
        }
        ck_assert_msg(forked, "trialbox never started its bwrap");
        ck_assert_int_eq(kill(pid, SIGKILL), 0);
        ck_assert_int_eq(wait_status(pid), 128 + SIGKILL);
        /* The slow bwrap would have started the session by now. */
        sleep_us(1500 * 1000);
        bool ran_file = access(ran, F_OK) == 0;
        size_t left = reap_leftovers(m, 0);
        say("trialbox killed while bwrap starts: the session %s, %zu processes outlived trialbox\n",
            ran_file ? "RAN" : "never ran", left);
        fixture_free(&f);
        ck_assert_msg(!ran_file && left == 0,
                      "trialbox was killed while bwrap started: the session %s and %zu processes outlived trialbox "
                      "(bwrap is exec'd without PR_SET_PDEATHSIG, and its own --die-with-parent comes too late)",
                      ran_file ? "ran" : "did not run", left);
}
END_TEST

/* The `running` record is written while bwrap sets the sandbox up; the
 * session's program starts only once it is in place (renamed after its
 * fdatasync). One inotify instance on the output folder and the repository
 * reports the rename and the session's first file in the order they came. */
START_TEST(the_running_record_is_in_place_before_the_session_starts)
{
        struct fixture f;
        fixture_new(&f);
        ck_assert_int_eq(mkdir(f.out, 0700), 0); /* an empty output folder, to watch */
        int in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        ck_assert_int_ge(in, 0);
        int w_out = inotify_add_watch(in, f.out, IN_MOVED_TO);
        int w_repo = inotify_add_watch(in, f.repo, IN_CREATE);
        ck_assert_int_ge(w_out, 0);
        ck_assert_int_ge(w_repo, 0);
        struct proc_result r;
        tb_shell(&r, &f, NULL, EXTRA("--", "-c", "touch RAN"));
        ck_assert_msg(r.status == 0, "trialbox exited %d: %s", r.status, r.err);
        char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
        ssize_t n = read(in, buf, sizeof buf);
        ck_assert_int_gt(n, 0);
        int record_at = -1, ran_at = -1, k = 0;
        for (char *p = buf; p < buf + n; k++) {
                const struct inotify_event *e = (const struct inotify_event *)p;
                if (record_at < 0 && e->wd == w_out && e->len && strcmp(e->name, "outcome.json") == 0)
                        record_at = k;
                if (ran_at < 0 && e->wd == w_repo && e->len && strcmp(e->name, "RAN") == 0)
                        ran_at = k;
                p += sizeof *e + e->len;
        }
        close(in);
        ck_assert_msg(ran_at >= 0, "the session made no RAN");
        ck_assert_msg(record_at >= 0 && record_at < ran_at,
                      "the session started (event %d) before the running record was in place (event %d)", ran_at,
                      record_at);
        assert_outcome(&f, "outcome", "completed");
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

/* trialbox killed at random moments of a Trial's start: outcome.json is
 * absent or a whole `running` record (never empty, never a part), and a
 * session that ran always had its record in place. */
START_TEST(trialbox_killed_at_any_step_of_the_start_leaves_a_whole_record_or_none_and_no_session_without_one)
{
        const long iterations = env_long("TB_FAULT_RECORD_ITERATIONS", 40);
        rng_seed("record kills");
        struct fixture f;
        fixture_new(&f);
        _cleanup_free_ char *m = marker("fault-record");
        _cleanup_free_ char *outp = xasprintf("%s/stdout", f.dir), *errp = xasprintf("%s/stderr", f.dir);
        _cleanup_free_ char *ran = xasprintf("%s/RAN", f.repo);
        long none = 0, running = 0, sessions = 0;
        for (long i = 0; i < iterations; i++) {
                struct fixture g = f;
                snprintf(g.out, sizeof g.out, "%s/out-%ld", f.dir, i);
                char *argv[64];
                /* sh -c SCRIPT MARKER: the marker is the session's $0, on its command line. */
                tb_argv(argv, 64, "shell", &g, EXTRA("--", "-c", "touch RAN; sleep 20", m));
                unlink(ran);
                pid_t pid = spawn_argv(tb_env(NULL), argv, outp, errp);
                long delay = (long)(rng() % 40000);
                sleep_us(delay);
                kill(pid, SIGKILL);
                ck_assert_int_eq(wait_status(pid), 128 + SIGKILL);
                reap_leftovers(m, 500);
                _cleanup_free_ char *path = xasprintf("%s/outcome.json", g.out);
                size_t len = 0;
                _cleanup_free_ char *text = read_all(path, &len, false);
                bool session_ran = access(ran, F_OK) == 0;
                sessions += session_ran;
                if (!text) {
                        ck_assert_msg(!session_ran, "iteration %ld (killed after %ld us): the session ran without a "
                                      "running record", i, delay);
                        none++;
                        tmpdir_remove(g.out);
                        continue;
                }
                json_object *j = json_tokener_parse(text);
                json_object *v;
                ck_assert_msg(j && json_object_is_type(j, json_type_object), "iteration %ld (killed after %ld us): "
                              "outcome.json is not a whole record: '%s'", i, delay, text);
                ck_assert_msg(json_object_object_get_ex(j, "outcome", &v) &&
                                      strcmp(json_object_get_string(v), "running") == 0,
                              "iteration %ld: outcome.json is not the running record: '%s'", i, text);
                json_object_put(j);
                running++;
                tmpdir_remove(g.out);
        }
        unlink(ran);
        say("record kills: %ld kills of trialbox 0-40 ms after its start: %ld left no record, %ld a whole running "
            "record; %ld sessions had started, each after its record\n",
            iterations, none, running, sessions);
        fixture_free(&f);
}
END_TEST

/* ---- full and read-only output folders (root: a tmpfs in a private mount namespace) ---- */

/* A private mount namespace for this test's process (Check forks each
 * test), so the mounts vanish with it. False when we may not mount. */
static bool private_mounts(void)
{
        if (geteuid() != 0) {
                say("skipped: mounting a small tmpfs needs root\n");
                return false;
        }
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
                say("skipped: cannot make a private mount namespace: %s\n", strerror(errno));
                return false;
        }
        return true;
}

static void mount_small_tmpfs(const char *dir)
{
        ck_assert_int_eq(mkdir(dir, 0755), 0);
        ck_assert_msg(mount("tmpfs", dir, "tmpfs", 0, "size=64k,mode=0755") == 0, "mount tmpfs: %s", strerror(errno));
}

/* Fill a filesystem to the last byte. */
static void fill(const char *dir)
{
        _cleanup_free_ char *p = xasprintf("%s/filler", dir);
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ck_assert_int_ge(fd, 0);
        char block[4096];
        memset(block, 'f', sizeof block);
        size_t chunk = sizeof block;
        while (chunk > 0) {
                if (write(fd, block, chunk) < 0)
                        chunk /= 2;
        }
        close(fd);
}

/* A codex login on the host, and what it was before the Trial. */
struct host_login {
        char *home, *path, *env, *content;
        struct stat st;
};

static void host_login_new(struct host_login *l, const struct fixture *f, size_t size, mode_t mode)
{
        l->home = xasprintf("%s/codex-home", f->dir);
        l->path = xasprintf("%s/auth.json", l->home);
        l->env = xasprintf("CODEX_HOME=%s", l->home);
        l->content = login_version(4242, size);
        ck_assert_int_eq(mkdir(l->home, 0700), 0);
        write_text(l->path, l->content, mode);
        ck_assert_int_eq(stat(l->path, &l->st), 0);
}

/* The host login is what it was: same content, mode and inode. */
static void host_login_check(const struct host_login *l, const char *when)
{
        size_t len = 0;
        _cleanup_free_ char *now = read_all(l->path, &len, true);
        struct stat st;
        ck_assert_msg(now != NULL, "%s: the host login is gone", when);
        ck_assert_msg(len == strlen(l->content) && memcmp(now, l->content, len) == 0, "%s: the host login changed",
                      when);
        ck_assert_int_eq(stat(l->path, &st), 0);
        ck_assert_msg((st.st_mode & 07777) == (l->st.st_mode & 07777), "%s: the host login's mode is %04o, was %04o",
                      when, (unsigned)(st.st_mode & 07777), (unsigned)(l->st.st_mode & 07777));
        ck_assert_msg(st.st_ino == l->st.st_ino, "%s: the host login was replaced", when);
}

static void host_login_free(struct host_login *l)
{
        free(l->home);
        free(l->path);
        free(l->env);
        free(l->content);
}

/* No file under `dir` holds the login's text (the private copy is gone or
 * was never made), and no temporary file is left. */
static void assert_no_copy_under(const char *dir, const char *when)
{
        _cleanup_free_ char *cmd = xasprintf(
                "! grep -rqs 00004242 '%s' && [ -z \"$(find '%s' -name '.*.tmp-*' 2>/dev/null)\" ]", dir, dir);
        ck_assert_msg(host_can(cmd), "%s: a copy of the login or a temporary file is left in '%s'", when, dir);
}

/* Run a codex Trial whose session is /bin/sh -c SCRIPT into OUT. */
static void run_codex(struct proc_result *r, const struct fixture *f, const char *out, const struct host_login *l,
                      const char *script)
{
        struct fixture g = *f;
        snprintf(g.out, sizeof g.out, "%s", out);
        tb_run(r, "codex", &g, ENV(l->env), EXTRA("--json", "--harness-bin", "/bin/sh", "--", "-c", script));
}

START_TEST(an_output_folder_full_before_is_status_126_and_one_the_session_fills_still_gets_its_outcome)
{
        if (!private_mounts())
                return;
        struct fixture f;
        struct proc_result r;
        struct host_login l;
        fixture_new(&f);
        host_login_new(&l, &f, 16 * 1024, 0640);
        _cleanup_free_ char *mnt = xasprintf("%s/full", f.dir);
        _cleanup_free_ char *out = xasprintf("%s/out", mnt);
        _cleanup_free_ char *outcome = xasprintf("%s/outcome.json", out);
        _cleanup_free_ char *ran = xasprintf("%s/RAN", f.repo);

        /* Full before the Trial: the login's private copy cannot be made. */
        mount_small_tmpfs(mnt);
        fill(mnt);
        run_codex(&r, &f, out, &l, "touch RAN");
        say("full filesystem, before the Trial: status %d, stderr: %s", r.status, r.err);
        ck_assert_msg(r.status == 126, "status %d, not 126; stderr: %s", r.status, r.err);
        ck_assert_msg(one_line(r.err), "not one line: %s", r.err);
        assert_contains(r.err, "outcome.json");
        assert_contains(r.err, "No space left on device");
        assert_lacks(r.err, "00004242");
        assert_lacks(r.out, "00004242");
        ck_assert_str_eq(r.out, ""); /* --json: no Outcome that was not written */
        ck_assert_int_ne(access(ran, F_OK), 0);
        ck_assert_int_ne(access(outcome, F_OK), 0);
        assert_no_copy_under(mnt, "full before the Trial");
        host_login_check(&l, "full before the Trial");
        proc_result_free(&r);
        ck_assert_int_eq(umount(mnt), 0);
        ck_assert_int_eq(rmdir(mnt), 0);

        /* Filled by the session itself: it completes, and its Outcome is
         * still written, into the space reserved before the session (the
         * reservation needs 64 KiB besides the login's copy). */
        ck_assert_int_eq(mkdir(mnt, 0755), 0);
        ck_assert_msg(mount("tmpfs", mnt, "tmpfs", 0, "size=256k,mode=0755") == 0, "mount tmpfs: %s", strerror(errno));
        run_codex(&r, &f, out, &l,
                  "echo ran; cat /dev/zero > \"$HOME/fill\" 2>/dev/null; "
                  "test \"$(head -c 8 \"$CODEX_HOME/auth.json\")\" = 00004242 && echo login-seen");
        say("full filesystem, filled by the session: status %d, outcome.json %s, stderr: %s", r.status,
            access(outcome, F_OK) == 0 ? "written" : "absent", r.err);
        ck_assert_msg(r.status == 0, "status %d, not 0; stderr: %s", r.status, r.err);
        ck_assert_msg(str_has_prefix(r.out, "ran\nlogin-seen\n{") && strstr(r.out, "\"outcome\":\"completed\""),
                      "stdout: %s", r.out);
        assert_lacks(r.err, "00004242");
        ck_assert_int_eq(access(outcome, F_OK), 0);
        _cleanup_free_ char *kind = outcome_field(out, "outcome");
        ck_assert_str_eq(kind, "completed");
        assert_no_copy_under(mnt, "filled by the session");
        host_login_check(&l, "filled by the session");
        proc_result_free(&r);
        ck_assert_int_eq(umount(mnt), 0);

        host_login_free(&l);
        fixture_free(&f);
}
END_TEST

START_TEST(a_read_only_output_folder_is_refused_or_status_126_with_one_line_and_the_login_intact)
{
        if (!private_mounts())
                return;
        struct fixture f;
        struct proc_result r;
        struct host_login l;
        fixture_new(&f);
        host_login_new(&l, &f, 64 * 1024, 0640);
        _cleanup_free_ char *mnt = xasprintf("%s/ro", f.dir);
        _cleanup_free_ char *fresh = xasprintf("%s/new", mnt);
        _cleanup_free_ char *existing = xasprintf("%s/existing", mnt);
        _cleanup_free_ char *ran = xasprintf("%s/RAN", f.repo);
        mount_small_tmpfs(mnt);
        ck_assert_int_eq(mkdir(existing, 0755), 0);
        ck_assert_msg(mount(NULL, mnt, NULL, MS_REMOUNT | MS_RDONLY, NULL) == 0, "remount ro: %s", strerror(errno));

        /* A new folder cannot be made: a usage error, nothing run. */
        run_codex(&r, &f, fresh, &l, "touch RAN");
        say("read-only filesystem, new output folder: status %d, stderr: %s", r.status, r.err);
        ck_assert_msg(r.status == 2, "status %d, not 2; stderr: %s", r.status, r.err);
        ck_assert_msg(one_line(r.err), "not one line: %s", r.err);
        assert_contains(r.err, "cannot create output folder");
        assert_contains(r.err, "Read-only file system");
        ck_assert_str_eq(r.out, "");
        ck_assert_int_ne(access(ran, F_OK), 0);
        host_login_check(&l, "read-only, new folder");
        proc_result_free(&r);

        /* An existing empty folder: no fresh home, no Outcome: trialbox failed. */
        run_codex(&r, &f, existing, &l, "touch RAN");
        say("read-only filesystem, existing output folder: status %d, stderr: %s", r.status, r.err);
        ck_assert_msg(r.status == 126, "status %d, not 126; stderr: %s", r.status, r.err);
        ck_assert_msg(one_line(r.err), "not one line: %s", r.err);
        assert_contains(r.err, "outcome.json");
        assert_contains(r.err, "Read-only file system");
        assert_lacks(r.err, "00004242");
        ck_assert_str_eq(r.out, "");
        ck_assert_int_ne(access(ran, F_OK), 0);
        assert_no_copy_under(mnt, "read-only, existing folder");
        host_login_check(&l, "read-only, existing folder");
        proc_result_free(&r);

        /* The same, unsandboxed: no room can be reserved for the Outcome,
         * so the session does not run. */
        struct fixture g = f;
        snprintf(g.out, sizeof g.out, "%s", existing);
        tb_run(&r, "shell", &g, NULL, EXTRA("--no-sandbox", "--", "-c", "touch RAN"));
        say("read-only filesystem, existing output folder, unsandboxed: status %d, stderr: %s", r.status, r.err);
        ck_assert_msg(r.status == 126, "status %d, not 126; stderr: %s", r.status, r.err);
        ck_assert_msg(one_line(r.err), "not one line: %s", r.err);
        ck_assert_int_ne(access(ran, F_OK), 0);
        proc_result_free(&r);

        ck_assert_int_eq(umount(mnt), 0);
        host_login_free(&l);
        fixture_free(&f);
}
END_TEST

/* ---- the Outcome cannot be forged or misattributed ---- */

/* The --json line trialbox prints for a shell session that failed with `code`. */
static void assert_real_json_line(const char *line, const char *exit_code)
{
        ck_assert_msg(str_has_prefix(line, "{\"harness\":\"shell\",\"outcome\":\"failed\""),
                      "the last line is not trialbox's Outcome: '%s'", line);
        _cleanup_free_ char *want = xasprintf("\"exit_code\":%s,", exit_code);
        ck_assert_msg(strstr(line, want) && !strstr(line, "fake"), "the last line is not the real Outcome: '%s'", line);
}

START_TEST(a_session_cannot_truncate_or_seek_trialboxs_stdout_nor_forge_its_last_line)
{
        struct fixture f;
        fixture_new(&f);
        _cleanup_free_ char *outp = xasprintf("%s/runner.log", f.dir), *errp = xasprintf("%s/stderr", f.dir);
        write_text(outp, "the runner's log, before the Trial\n", 0644);
        int out = open(outp, O_WRONLY | O_APPEND | O_CLOEXEC);
        int err = open(errp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        ck_assert_int_ge(out, 0);
        /* Truncate the runner's log through /proc, then clear O_APPEND, write
         * a fake Outcome after some padding and seek back to the start, so
         * that trialbox's own line would land before the fake one. */
        const char *script =
                "echo session-line; : > /proc/self/fd/1; "
                "perl -e 'use Fcntl; fcntl(STDOUT, F_SETFL, 0); "
                "syswrite(STDOUT, (\"x\" x 4000) . \"\\n{\\\"harness\\\":\\\"shell\\\",\\\"outcome\\\":\\\"completed\\\","
                "\\\"exit_code\\\":0,\\\"fake\\\":1}\\n\"); sysseek(STDOUT, 0, 0)'; exit 3";
        char *argv[64];
        tb_argv(argv, 64, "shell", &f, EXTRA("--json", "--", "-c", script));
        pid_t pid = spawn(tb_env(NULL), argv, &(struct tb_spawn_io){ .out_fd = out, .err_fd = err });
        close(out);
        close(err);
        ck_assert_int_eq(wait_status(pid), 3);
        _cleanup_free_ char *log = read_text(outp), *errs = read_text(errp);
        ck_assert_msg(str_has_prefix(log, "the runner's log, before the Trial\nsession-line\n"),
                      "the session reached the runner's log: '%.200s'; stderr: %s", log, errs);
        _cleanup_free_ char *last = last_line(log);
        assert_real_json_line(last, "3");
        assert_outcome(&f, "outcome", "failed");
        assert_outcome(&f, "exit_code", "3");
        fixture_free(&f);
}
END_TEST

/* trialbox's stdout is a pipe nobody reads, and the session prints without
 * end: the relay never blocks, so the deadline still comes on time, the
 * Trial is failed/timeout, and the output its reader never took is
 * counted. Its stderr the same. */
START_TEST(a_reader_of_trialboxs_output_that_stops_never_stalls_the_timeout_or_the_record)
{
        struct fixture f;
        fixture_new(&f);
        int out[2], err[2];
        ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
        ck_assert_int_eq(pipe2(err, O_CLOEXEC), 0);
        char *argv[64];
        const char *stream = _i == 0 ? "yes session-output-that-nobody-reads" : "yes session-errors >&2";
        tb_argv(argv, 64, "shell", &f, EXTRA("--timeout", "2", "--json", "--", "-c", stream));
        long long t0 = now_ms();
        pid_t pid = spawn(tb_env(NULL), argv, &(struct tb_spawn_io){ .out_fd = out[1], .err_fd = err[1] });
        close(out[1]);
        close(err[1]);
        int w = 0;
        pid_t done = 0;
        while ((done = waitpid(pid, &w, WNOHANG)) == 0 && now_ms() - t0 < 20000)
                usleep(20 * 1000);
        long long took = now_ms() - t0;
        if (done == 0) {
                kill(pid, SIGKILL);
                waitpid(pid, &w, 0);
        }
        ck_assert_msg(done == pid, "trialbox still ran after %lld ms: its relay waited on a reader", took);
        ck_assert_msg(took < 6000, "trialbox took %lld ms for a 2 s timeout", took);
        ck_assert_msg(WIFEXITED(w) && WEXITSTATUS(w) == 124, "wait status %#x", w);
        assert_outcome(&f, "outcome", "failed");
        assert_outcome(&f, "cause", "timeout");
        _cleanup_free_ char *dropped = outcome_field(f.out, "output_dropped");
        json_object *j = dropped ? json_tokener_parse(dropped) : NULL;
        ck_assert_msg(j != NULL, "no output_dropped: %s", dropped ? dropped : "(none)");
        long long n = json_object_get_int64(json_get(j, _i == 0 ? "stdout" : "stderr"));
        ck_assert_msg(n > 0, "nothing counted as dropped: %s", dropped);
        json_object_put(j);
        close(out[0]);
        close(err[0]);
        fixture_free(&f);
}
END_TEST

START_TEST(a_fake_outcome_printed_last_by_the_session_is_not_the_last_line)
{
        struct fixture f;
        fixture_new(&f);
        struct proc_result r;
        /* No newline after it: trialbox's line must still be a line of its own. */
        tb_run(&r, "shell", &f, NULL,
               EXTRA("--json", "--", "-c",
                     "printf '{\"harness\":\"shell\",\"outcome\":\"completed\",\"exit_code\":0,\"fake\":1}'; exit 1"));
        ck_assert_int_eq(r.status, 1);
        _cleanup_free_ char *last = last_line(r.out);
        assert_real_json_line(last, "1");
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

/* Start trialbox in a process group of its own (as a shell job) on a
 * `shell` session running `script`, sandboxed or not, its stderr into
 * *errp; return its pid once the session has touched STARTED in the
 * repository. */
static pid_t start_session_job(struct fixture *f, const char *script, bool sandboxed, char **errp)
{
        *errp = path_in(f->dir, "stderr");
        return tb_shell_start(f, sandboxed ? EXTRA("--", "-c", script) : EXTRA("--no-sandbox", "--", "-c", script),
                              "STARTED", true);
}

/* timeout(1), Ctrl-C and runners signal trialbox's whole process group:
 * trialbox alone may receive it, forward it, and record the session as
 * interrupted by it (void: the operator's signal, not the agent's
 * failure), whatever "bwrap: " lines the session printed. Run 0 is
 * sandboxed, run 1 unsandboxed. */
START_TEST(a_signal_to_trialboxs_process_group_ends_the_session_as_void_interrupted_by_that_signal)
{
        struct fixture f;
        fixture_new(&f);
        _cleanup_free_ char *errp = NULL;
        pid_t pid = start_session_job(&f, "echo 'bwrap: fake message' >&2; touch STARTED; sleep 60; exit 0", _i == 0,
                                      &errp);
        /* What timeout(1) does: its child, then its whole group. */
        ck_assert_int_eq(kill(pid, SIGTERM), 0);
        ck_assert_int_eq(kill(-pid, SIGTERM), 0);
        int status = wait_status(pid);
        _cleanup_free_ char *errs = read_text(errp);
        ck_assert_msg(status == 128 + SIGTERM, "status %d; stderr: %s", status, errs);
        assert_outcome(&f, "outcome", "void");
        assert_outcome(&f, "cause", "interrupted");
        assert_outcome_has(&f, "detail", "SIGTERM reached trialbox, which forwarded it to the session");
        assert_outcome(&f, "exit_code", "null");
        _cleanup_free_ char *detail = outcome_field(f.out, "detail");
        ck_assert_msg(!strstr(detail, "fake"), "the session's line became the detail: %s", detail);
        fixture_free(&f);
}
END_TEST

/* CI saw the test above fail once: the second SIGTERM (the group's) came
 * after the session had ended, when trialbox no longer held it, and ended
 * trialbox before its Outcome was written ("running"). Here SIGTERM keeps
 * coming, every millisecond, until trialbox exits: each lands at another
 * moment of its end. */
START_TEST(signals_that_keep_coming_as_the_session_ends_never_stop_trialbox_before_its_outcome)
{
        struct fixture f;
        fixture_new(&f);
        _cleanup_free_ char *errp = NULL;
        pid_t pid = start_session_job(&f, "touch STARTED; sleep 60; exit 0", _i == 0, &errp);
        int w, sent = 0;
        pid_t done;
        while ((done = waitpid(pid, &w, WNOHANG)) == 0) {
                kill(sent % 2 ? -pid : pid, SIGTERM);
                sent++;
                usleep(1000);
        }
        ck_assert_int_eq(done, pid);
        _cleanup_free_ char *errs = read_text(errp);
        ck_assert_msg(WIFEXITED(w) && WEXITSTATUS(w) == 128 + SIGTERM, "wait status %#x after %d signals; stderr: %s",
                      w, sent, errs);
        assert_outcome(&f, "outcome", "void");
        assert_outcome(&f, "cause", "interrupted");
        fixture_free(&f);
}
END_TEST

START_TEST(a_session_that_prints_a_bwrap_message_and_exits_1_is_failed_without_it)
{
        struct fixture f;
        fixture_new(&f);
        struct proc_result r;
        tb_run(&r, "shell", &f, NULL, EXTRA("--", "-c", "echo 'bwrap: fake message' >&2; exit 1"));
        assert_failed(&f, &r, 1);
        _cleanup_free_ char *detail = outcome_field(f.out, "detail");
        ck_assert_msg(!strstr(detail, "fake"), "the session's line became the detail: %s", detail);
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

START_TEST(a_session_that_exits_137_has_exit_code_137_and_no_signal)
{
        struct fixture f;
        fixture_new(&f);
        struct proc_result r;
        tb_run(&r, "shell", &f, NULL, EXTRA("--", "-c", "exit 137"));
        assert_failed(&f, &r, 137);
        assert_outcome(&f, "signal", "null");
        proc_result_free(&r);
        fixture_free(&f);
}
END_TEST

/* An interactive Harness still has a terminal (a pty of trialbox's), and
 * what it does to it stays there: the user's terminal ends the Trial with
 * the settings and size it had. */
START_TEST(a_session_on_a_terminal_gets_a_pty_and_leaves_the_terminal_as_it_was)
{
        struct fixture f;
        fixture_new(&f);
        _cleanup_free_ char *slave = NULL;
        int master = pty_open(&slave);
        int tty = open(slave, O_RDWR | O_NOCTTY | O_CLOEXEC);
        ck_assert_int_ge(tty, 0);
        struct winsize size_before = { .ws_row = 24, .ws_col = 80 }, size_after;
        ck_assert_int_eq(ioctl(tty, TIOCSWINSZ, &size_before), 0);
        struct termios before, after;
        ck_assert_int_eq(tcgetattr(tty, &before), 0);
        ck_assert(before.c_lflag & ECHO);

        char *argv[64];
        tb_argv(argv, 64, "shell", &f,
                EXTRA("--", "-c", "[ -t 0 ] && [ -t 1 ] && echo interactive=yes; stty -echo raw; stty cols 33 rows 7; "
                                  "echo size=$(stty size)"));
        /* The terminal is trialbox's controlling terminal, stdin, stdout and stderr. */
        pid_t pid = spawn(tb_env(NULL), argv, &(struct tb_spawn_io){ .tty = slave });
        /* Read the terminal as a terminal emulator would, until trialbox ends. */
        char out[65536];
        size_t len = 0;
        int w = 0;
        for (bool done = false; !done;) {
                done = waitpid(pid, &w, WNOHANG) == pid;
                struct pollfd p = { .fd = master, .events = POLLIN };
                while (poll(&p, 1, done ? 0 : 50) > 0 && len < sizeof out - 1) {
                        ssize_t n = read(master, out + len, sizeof out - 1 - len);
                        if (n <= 0)
                                break;
                        len += (size_t)n;
                }
        }
        out[len] = '\0';
        ck_assert_msg(WIFEXITED(w) && WEXITSTATUS(w) == 0, "the Trial ended with status %d: %s", w, out);
        ck_assert_msg(strstr(out, "interactive=yes"), "the session had no terminal: %s", out);
        ck_assert_msg(strstr(out, "size=7 33"), "the session could not size its terminal: %s", out);
        ck_assert_int_eq(tcgetattr(tty, &after), 0);
        ck_assert_int_eq(ioctl(tty, TIOCGWINSZ, &size_after), 0);
        ck_assert_msg(after.c_lflag == before.c_lflag && after.c_iflag == before.c_iflag &&
                              after.c_oflag == before.c_oflag && after.c_cflag == before.c_cflag,
                      "the terminal's settings changed: lflag %#x -> %#x", (unsigned)before.c_lflag,
                      (unsigned)after.c_lflag);
        ck_assert_msg(size_after.ws_row == 24 && size_after.ws_col == 80, "the terminal is now %ux%u",
                      size_after.ws_col, size_after.ws_row);
        assert_outcome(&f, "outcome", "completed");
        close(tty);
        close(master);
        fixture_free(&f);
}
END_TEST


/* ---- the fresh home after the session ---- */

/* A session that replaces its login's folder with a link to a host folder:
 * one holding a decoy login, then the host's real login folder itself. */
START_TEST(a_login_folder_replaced_by_a_link_reaches_nothing_on_the_host)
{
        struct fixture f;
        struct proc_result r;
        struct host_login l;
        fixture_new(&f);
        host_login_new(&l, &f, 4096, 0600);
        _cleanup_free_ char *decoy_dir = path_in(f.dir, "decoy");
        write_in(decoy_dir, "auth.json", "{\"decoy\": true}", 0644);
        _cleanup_free_ char *decoy = path_in(decoy_dir, "auth.json");
        chmod(f.dir, 0755);
        chmod(decoy_dir, 0755);

        const char *targets[] = { decoy_dir, l.home };
        for (size_t i = 0; i < TB_ARRAY_SIZE(targets); i++) {
                _cleanup_free_ char *out = xasprintf("%s/out-%zu", f.dir, i);
                _cleanup_free_ char *script =
                        xasprintf("rm -rf \"$HOME/.codex\" && ln -s '%s' \"$HOME/.codex\" && echo linked", targets[i]);
                run_codex(&r, &f, out, &l, script);
                ck_assert_msg(strstr(r.out, "linked"), "the session could not plant its link: %s", r.err);
                host_login_check(&l, targets[i]);
                _cleanup_free_ char *left = read_text(decoy);
                ck_assert_msg(left && strcmp(left, "{\"decoy\": true}") == 0, "the decoy login was changed or removed");
                char *outcome = outcome_field(out, "outcome");
                ck_assert_str_eq(outcome, "completed");
                free(outcome);
                proc_result_free(&r);
        }
        host_login_free(&l);
        fixture_free(&f);
}
END_TEST

/* A session that replaces its synced login with a link to a host file: the
 * host login never gets that file's content. */
START_TEST(a_synced_login_replaced_by_a_link_to_a_host_file_is_not_written_back)
{
        struct fixture f;
        struct proc_result r;
        struct host_login l;
        fixture_new(&f);
        host_login_new(&l, &f, 4096, 0600);
        _cleanup_free_ char *host_file = path_in(f.dir, "host-file");
        write_text(host_file, "host-file-content", 0644);
        chmod(f.dir, 0755);
        const char *targets[] = { "/etc/passwd", host_file };
        for (size_t i = 0; i < TB_ARRAY_SIZE(targets); i++) {
                _cleanup_free_ char *out = xasprintf("%s/out-%zu", f.dir, i);
                /* Both ways a session can put the link: renamed over, and
                 * then written to, so that the login is seen to change. */
                _cleanup_free_ char *script = xasprintf(
                        "ln -s '%s' \"$HOME/.codex/.l\" && mv -f \"$HOME/.codex/.l\" \"$HOME/.codex/auth.json\" && "
                        "sleep 0.2 && mkdir -p \"$HOME/d\" && ln -s '%s' \"$HOME/d/auth.json\" && "
                        "rm -rf \"$HOME/.codex\" && mv \"$HOME/d\" \"$HOME/.codex\" && echo linked",
                        targets[i], targets[i]);
                run_codex(&r, &f, out, &l, script);
                ck_assert_msg(strstr(r.out, "linked"), "the session could not plant its link: %s", r.err);
                host_login_check(&l, targets[i]);
                proc_result_free(&r);
        }
        _cleanup_free_ char *still = read_text(host_file);
        ck_assert_str_eq(still, "host-file-content");
        host_login_free(&l);
        fixture_free(&f);
}
END_TEST

/* A FIFO in place of the synced login (and of its folder): trialbox never
 * waits on it, ends with an Outcome, and still answers SIGTERM. */
START_TEST(a_fifo_in_place_of_the_synced_login_never_hangs_trialbox)
{
        struct fixture f;
        struct proc_result r;
        struct host_login l;
        fixture_new(&f);
        host_login_new(&l, &f, 4096, 0600);
        _cleanup_free_ char *out = path_in(f.dir, "out-ends");
        run_codex(&r, &f, out, &l,
                  "rm \"$HOME/.codex/auth.json\" && mkfifo \"$HOME/.codex/auth.json\" && "
                  "mkfifo \"$HOME/.codex/.auth-1\" && mv \"$HOME/.codex/.auth-1\" \"$HOME/.codex/auth.json\" && "
                  "echo planted");
        ck_assert_msg(strstr(r.out, "planted"), "the session could not plant its FIFO: %s", r.err);
        char *outcome = outcome_field(out, "outcome");
        ck_assert_str_eq(outcome, "completed");
        free(outcome);
        host_login_check(&l, "after a FIFO");
        proc_result_free(&r);

        /* The same, and the session stays: SIGTERM ends the Trial. */
        struct fixture g = f;
        snprintf(g.out, sizeof g.out, "%s/out-term", f.dir);
        _cleanup_free_ char *ready = path_in(f.repo, "PLANTED");
        char *argv[64];
        tb_argv(argv, 64, "codex", &g,
                EXTRA("--harness-bin", "/bin/sh", "--", "-c",
                      "rm \"$HOME/.codex/auth.json\" && mkfifo \"$HOME/.codex/auth.json\" && "
                      "mkfifo \"$HOME/.codex/.a\" && mv \"$HOME/.codex/.a\" \"$HOME/.codex/auth.json\" && "
                      "touch PLANTED && sleep 600"));
        _cleanup_free_ char *outp = path_in(f.dir, "term.out"), *errp = path_in(f.dir, "term.err");
        pid_t pid = spawn_argv(tb_env(ENV(l.env)), argv, outp, errp);
        ck_assert_msg(wait_for_file(ready, 20000), "the session never planted its FIFO");
        ck_assert_int_eq(kill(pid, SIGTERM), 0);
        wait_status(pid);
        outcome = outcome_field(g.out, "outcome");
        ck_assert_msg(outcome && strcmp(outcome, "running") != 0, "no final Outcome after SIGTERM");
        free(outcome);
        host_login_check(&l, "after a FIFO and SIGTERM");
        host_login_free(&l);
        fixture_free(&f);
}
END_TEST

TB_SUITE("faults", 120)
{
        tcase_add_test(tc, credentials_set_killed_at_random_moments_leaves_the_old_or_the_new_value);
        tcase_add_test(tc, trialbox_killed_during_login_write_backs_leaves_the_host_login_whole);
        tcase_add_test(tc, trialbox_killed_at_random_moments_leaves_no_sandbox_running);
        tcase_add_test(tc, a_sandbox_still_starting_when_trialbox_is_killed_never_runs_its_session);
        tcase_add_test(tc, the_running_record_is_in_place_before_the_session_starts);
        tcase_add_test(tc, trialbox_killed_at_any_step_of_the_start_leaves_a_whole_record_or_none_and_no_session_without_one);
        tcase_add_test(tc, an_output_folder_full_before_is_status_126_and_one_the_session_fills_still_gets_its_outcome);
        tcase_add_test(tc, a_read_only_output_folder_is_refused_or_status_126_with_one_line_and_the_login_intact);
        tcase_add_test(tc, a_session_cannot_truncate_or_seek_trialboxs_stdout_nor_forge_its_last_line);
        tcase_add_test(tc, a_fake_outcome_printed_last_by_the_session_is_not_the_last_line);
        tcase_add_loop_test(tc, a_reader_of_trialboxs_output_that_stops_never_stalls_the_timeout_or_the_record, 0, 2);
        tcase_add_loop_test(tc, a_signal_to_trialboxs_process_group_ends_the_session_as_void_interrupted_by_that_signal, 0, 2);
        tcase_add_loop_test(tc, signals_that_keep_coming_as_the_session_ends_never_stop_trialbox_before_its_outcome, 0,
                            2);
        tcase_add_test(tc, a_session_that_prints_a_bwrap_message_and_exits_1_is_failed_without_it);
        tcase_add_test(tc, a_session_that_exits_137_has_exit_code_137_and_no_signal);
        tcase_add_test(tc, a_session_on_a_terminal_gets_a_pty_and_leaves_the_terminal_as_it_was);
        tcase_add_test(tc, a_login_folder_replaced_by_a_link_reaches_nothing_on_the_host);
        tcase_add_test(tc, a_synced_login_replaced_by_a_link_to_a_host_file_is_not_written_back);
        tcase_add_test(tc, a_fifo_in_place_of_the_synced_login_never_hangs_trialbox);
}
