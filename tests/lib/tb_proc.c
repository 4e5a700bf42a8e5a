/* The toolkit's programs: spawning and running them, the host's processes,
 * ptys (tb_test.h). */
#define _GNU_SOURCE
#include "tb_test.h"
#include "base/util.h"

#include <check.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void apply_env(char *const env[])
{
        for (size_t i = 0; env && env[i]; i++) {
                char *eq = strchr(env[i], '=');
                if (!eq) {
                        unsetenv(env[i]);
                        continue;
                }
                char *name = strndup(env[i], (size_t)(eq - env[i]));
                setenv(name, eq + 1, 1);
                free(name);
        }
}

/* In the child: put `file` (created 0600 or truncated), else `fd`, else the
 * terminal `tty_fd`, on `target`; leave it as it is when none is given. */
static int redirect(int target, const char *file, int fd, int tty_fd)
{
        if (file)
                fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        else if (fd <= 0)
                fd = tty_fd;
        if (fd < 0)
                return file ? -1 : 0;
        return dup2(fd, target) < 0 ? -1 : 0;
}

/* In the child: everything spawn() does before exec. */
static int child_setup(const struct tb_spawn_io *io)
{
        if (io->own_group && setpgid(0, 0) < 0)
                return -1;
        if (io->background && (signal(SIGINT, SIG_IGN) == SIG_ERR || signal(SIGQUIT, SIG_IGN) == SIG_ERR))
                return -1;
        int block[] = { io->blocked, io->pending };
        for (size_t i = 0; i < TB_ARRAY_SIZE(block); i++) {
                sigset_t set;
                sigemptyset(&set);
                if (block[i] > 0 && (sigaddset(&set, block[i]) < 0 || sigprocmask(SIG_BLOCK, &set, NULL) < 0))
                        return -1;
        }
        if (io->pending > 0 && raise(io->pending) != 0) /* blocked: it stays pending across the exec */
                return -1;
        if (io->tty && setsid() < 0)
                return -1;
        int in = io->tty ? open(io->tty, O_RDWR) : open(io->in ? io->in : "/dev/null", O_RDONLY);
        if (in < 0 || dup2(in, 0) < 0)
                return -1;
        int tty_fd = io->tty ? in : -1;
        if (redirect(1, io->out, io->out_fd, tty_fd) < 0 || redirect(2, io->err, io->err_fd, tty_fd) < 0)
                return -1;
        if (io->keep_fd > 0 && dup2(io->keep_fd, 9) < 0)
                return -1;
        if (io->close_fds && io->keep_fd > 0) {
                close_range(3, 8, 0);
                close_range(10, ~0U, 0);
        } else if (io->close_fds) {
                close_range(3, ~0U, 0);
        }
        return 0;
}

pid_t spawn(char *const env[], char *const argv[], const struct tb_spawn_io *io)
{
        static const struct tb_spawn_io defaults = { 0 };
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0)
                abort(); /* not ck_assert: host_can() also runs while a suite is being made */
        if (pid == 0) {
                if (child_setup(io ? io : &defaults) < 0)
                        _exit(126);
                apply_env(env);
                execv(argv[0], argv);
                _exit(127);
        }
        return pid;
}

pid_t spawn_argv(char *const env[], char *const argv[], const char *out_file, const char *err_file)
{
        return spawn(env, argv, &(struct tb_spawn_io){ .out = out_file, .err = err_file });
}

static int to_status(int w) { return WIFEXITED(w) ? WEXITSTATUS(w) : 128 + WTERMSIG(w); }

int wait_status(pid_t pid)
{
        int w;
        while (waitpid(pid, &w, 0) < 0)
                if (errno != EINTR)
                        abort();
        return to_status(w);
}

void run_argv_in(struct proc_result *r, char *const env[], char *const argv[], const char *in_file)
{
        char outp[] = "/tmp/tbtest-out.XXXXXX", errp[] = "/tmp/tbtest-err.XXXXXX";
        int a = mkstemp(outp), b = mkstemp(errp);
        close(a);
        close(b);
        pid_t pid = spawn(env, argv, &(struct tb_spawn_io){ .in = in_file, .out = outp, .err = errp });
        r->status = wait_status(pid);
        r->out = read_text(outp);
        r->err = read_text(errp);
        unlink(outp);
        unlink(errp);
}

void run_argv(struct proc_result *r, char *const env[], char *const argv[]) { run_argv_in(r, env, argv, NULL); }

void proc_result_free(struct proc_result *r)
{
        free(r->out);
        free(r->err);
}

bool host_can(const char *cmd)
{
        char *argv[] = { "/bin/sh", "-c", (char *)cmd, NULL };
        struct proc_result r;
        run_argv(&r, NULL, argv);
        bool ok = r.status == 0;
        proc_result_free(&r);
        return ok;
}

void sh_ok(const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *cmd = xvasprintf(fmt, ap);
        va_end(ap);
        ck_assert_msg(host_can(cmd), "failed on the host: %s", cmd);
}

void git_repo_new(const char *dir)
{
        sh_ok("set -e; cd '%s'; git init -q -b main; echo one > tracked; git add tracked; " GIT " commit -q -m base",
              dir);
}

/* Is the process `pid` (a /proc name) as host_pids() asks? */
static bool process_matches(const char *pid, const char *needle, const char *comm, const char *const unless[])
{
        char path[300];
        if (comm) {
                snprintf(path, sizeof path, "/proc/%s/comm", pid);
                _cleanup_free_ char *c = read_text(path);
                size_t n = strlen(comm);
                if (!c || strncmp(c, comm, n) != 0 || c[n] != '\n')
                        return false;
        }
        size_t len;
        snprintf(path, sizeof path, "/proc/%s/cmdline", pid);
        _cleanup_free_ char *cmd = read_all(path, &len, true);
        if (!cmd || len == 0)
                return false;
        for (size_t i = 0; i < len; i++)
                if (cmd[i] == '\0')
                        cmd[i] = ' ';
        if (!strstr(cmd, needle))
                return false;
        for (size_t i = 0; unless && unless[i]; i++)
                if (strstr(cmd, unless[i]))
                        return false;
        return true;
}

size_t host_pids(const char *needle, const char *comm, const char *const unless[], pid_t *pids, size_t cap)
{
        DIR *d = opendir("/proc");
        struct dirent *e;
        size_t found = 0;
        while (d && (e = readdir(d))) {
                if (e->d_name[0] < '0' || e->d_name[0] > '9' || atoi(e->d_name) == getpid())
                        continue;
                if (!process_matches(e->d_name, needle, comm, unless))
                        continue;
                if (pids && found < cap)
                        pids[found] = atoi(e->d_name);
                found++;
        }
        if (d)
                closedir(d);
        return found;
}

bool host_process_with(const char *needle) { return host_pids(needle, NULL, NULL, NULL, 0) > 0; }

bool host_process_with_both(const char *needle, const char *also)
{
        pid_t pids[64];
        size_t n = host_pids(needle, NULL, NULL, pids, 64);
        for (size_t i = 0; i < n && i < 64; i++) {
                char pid[16];
                snprintf(pid, sizeof pid, "%d", (int)pids[i]);
                if (process_matches(pid, also, NULL, NULL))
                        return true;
        }
        return false;
}

bool host_processes_gone(const char *needle, const char *comm, int ms)
{
        for (int waited = 0; waited < ms; waited += 10) {
                if (host_pids(needle, comm, NULL, NULL, 0) == 0)
                        return true;
                sleep_us(10000);
        }
        return host_pids(needle, comm, NULL, NULL, 0) == 0;
}

void sleep_number(char *buf, size_t n)
{
        static unsigned k;
        snprintf(buf, n, "9%d%ld.%u", (int)getpid() % 100000, (long)time(NULL) % 100000, k++);
}

void sleep_us(long us)
{
        struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
        while (nanosleep(&ts, &ts) < 0)
                ;
}

int pty_open(char **slave)
{
        int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        ck_assert_msg(master >= 0, "posix_openpt: %s", strerror(errno));
        ck_assert_int_eq(grantpt(master), 0);
        ck_assert_int_eq(unlockpt(master), 0);
        *slave = xstrdup(ptsname(master));
        return master;
}

bool wait_for_file(const char *path, int ms)
{
        for (int waited = 0; waited < ms; waited += 10) {
                if (access(path, F_OK) == 0)
                        return true;
                sleep_us(10000);
        }
        return access(path, F_OK) == 0;
}
