/* A probe of the kernel calls the session's seccomp filter denies: each
 * call is made so that, unfiltered, it ends otherwise than the filter would
 * end it (a success, or an errno checked before any permission: EINVAL,
 * EFAULT, ENOENT). Prints one `name=ok` or `name=ERRNO` line per call. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/keyctl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

static void say(const char *name, long r)
{
        if (r >= 0)
                printf("%s=ok\n", name);
        else
                printf("%s=%s\n", name, strerrorname_np(errno) ? strerrorname_np(errno) : "E?");
}

static long ptrace_attach_child(void)
{
        pid_t child = fork();
        if (child == 0) {
                pause();
                _exit(0);
        }
        long r = ptrace(PTRACE_ATTACH, child, NULL, NULL);
        int e = errno;
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        errno = e;
        return r;
}

static long unshare_user(void)
{
        pid_t child = fork();
        if (child == 0)
                _exit(unshare(CLONE_NEWUSER) == 0 ? 0 : errno);
        int st;
        waitpid(child, &st, 0);
        errno = WIFEXITED(st) ? WEXITSTATUS(st) : EINTR;
        return errno ? -1 : 0;
}

int main(void)
{
        say("keyctl", syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_PROCESS_KEYRING, 1));
        say("add_key", syscall(SYS_add_key, "user", "trialbox-probe", "x", 1, KEY_SPEC_PROCESS_KEYRING));
        say("bpf", syscall(SYS_bpf, 9999, NULL, 0));
        say("perf_event_open", syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0));
        say("userfaultfd", syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY));
        say("io_uring_setup", syscall(SYS_io_uring_setup, 1, NULL));
        say("mount", mount("none", "/nonexistent/trialbox-probe", "tmpfs", 0, NULL));
        say("umount2", umount2("/nonexistent/trialbox-probe", 0));
        say("fsopen", syscall(SYS_fsopen, "trialbox-no-such-fs", 0));
        say("clone3", syscall(SYS_clone3, NULL, 0));
        say("unshare_user", unshare_user());
        say("ptrace_attach", ptrace_attach_child());
        return 0;
}
