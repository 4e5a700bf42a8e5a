#define _GNU_SOURCE
#include "gitguard/hostgit.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/alloc.h"
#include "base/strv.h"
#include "base/path.h"

bool host_git_run(const char *git, const char *home, const char *const args[], char *out, size_t cap, size_t *len_out)
{
        int fds[2];
        if (pipe2(fds, O_CLOEXEC) < 0)
                return false;
        struct strv argv = { 0 };
        strv_add(&argv, git);
        for (size_t i = 0; args[i]; i++)
                strv_add(&argv, args[i]);
        _cleanup_free_ char *home_env = xasprintf("HOME=%s", home ? home : "/nonexistent");
        char *const envp[] = { home_env, "GIT_CONFIG_NOSYSTEM=1", "PATH=" TB_DEFAULT_PATH, NULL };
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addchdir_np(&fa, "/");
        /* git gets no signal mask of ours (the supervisor's, after a session). */
        posix_spawnattr_t attr;
        sigset_t none;
        sigemptyset(&none);
        posix_spawnattr_init(&attr);
        posix_spawnattr_setsigmask(&attr, &none);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
        pid_t pid = -1;
        int r = posix_spawn(&pid, git, &fa, &attr, argv.v, envp);
        posix_spawnattr_destroy(&attr);
        posix_spawn_file_actions_destroy(&fa);
        strv_done(&argv);
        close(fds[1]);
        size_t len = 0;
        bool whole = true;
        char sink[4096];
        /* Read to the end, whatever its size: a child left writing to a
         * full pipe would never be reaped. */
        for (ssize_t n; r == 0;) {
                bool room = len < cap - 1;
                n = room ? read(fds[0], out + len, cap - 1 - len) : read(fds[0], sink, sizeof sink);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                if (room)
                        len += (size_t)n;
                else
                        whole = false;
        }
        close(fds[0]);
        out[len] = '\0';
        if (len_out)
                *len_out = len;
        int status = 0;
        if (r != 0)
                return false;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return false;
        return whole && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}
