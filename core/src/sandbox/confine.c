#define _GNU_SOURCE
#include "sandbox/confine.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/keyctl.h>
#include <linux/seccomp.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/error.h"
#include "base/io.h"
#include "base/path.h"
#include "sandbox/confine_bpf.h"
#include "sandbox/confine_rules.h"

/* The programs the build compiled (confine_bpf.h), when libseccomp would
 * make the same ones here: built under this system's key. NULL otherwise. */
static const struct confine_bpf *built_filter(void)
{
        static int usable = -1; /* the key is the same for every filter of a process */
        if (usable < 0) {
                const struct confine_bpf_key *k = &confine_bpf_built.key;
                struct confine_bpf_key here;
                usable = 0;
                if (k->arch != 0) {
                        confine_rules_key(&here);
                        usable = here.arch == k->arch && memcmp(here.lib, k->lib, sizeof here.lib) == 0;
                }
        }
        return usable ? &confine_bpf_built : NULL;
}

/* The filter's BPF program into `mfd`: the built one, or compiled now. */
static int write_filter(bool nested_userns, bool compile, int mfd, const char **step)
{
        const struct confine_bpf *b = compile ? NULL : built_filter();
        if (!b)
                return confine_rules_export(nested_userns, CONFINE_TREE, mfd, step);
        *step = "writing the filter";
        return loop_write(mfd, b->prog[nested_userns], b->len[nested_userns]);
}

/* An empty memfd for the filter, numbered above every fd the keeper places. */
int confine_filter_reserve(int *fd, struct tb_error *err)
{
        _cleanup_close_ int mfd = memfd_create("trialbox-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (mfd < 0)
                return tb_fail(err, -errno, "creating the seccomp filter's memfd: %s", strerror(errno));
        /* Above the fds the supervisor and keeper place (stdio, the status
         * fd, the block fd, the exec-error pipe: sandbox/spec.h), so placing them
         * never closes this one; at a number no other open fd decides. */
        _Static_assert(SANDBOX_FILTER_FD_MIN > KEEPER_BLOCK_HOLD_FD, "the filter's fd above the keeper's");
        int high = fcntl(mfd, F_DUPFD_CLOEXEC, SANDBOX_FILTER_FD_MIN);
        if (high < 0 && errno == EINVAL) /* RLIMIT_NOFILE at or below it: the lowest above the keeper's */
                high = fcntl(mfd, F_DUPFD_CLOEXEC, KEEPER_BLOCK_HOLD_FD + 1);
        if (high < 0)
                return tb_fail(err, -errno, "placing the seccomp filter's fd: %s", strerror(errno));
        *fd = high;
        return 0;
}

/* The program into the reserved memfd `fd`, sealed, its offset (shared
 * with every copy of the fd: bwrap's, started early) back at its start. */
static int filter_fill(int fd, bool nested_userns, bool compile, struct tb_error *err)
{
        const char *step = "creating the filter";
        int r = write_filter(nested_userns, compile, fd, &step);
        if (r < 0)
                return tb_fail(err, r, "building the seccomp filter: %s: %s", step, strerror(-r));
        if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0 ||
            lseek(fd, 0, SEEK_SET) < 0)
                return tb_fail(err, -errno, "sealing the seccomp filter: %s", strerror(errno));
        return 0;
}

static int filter_fd(bool nested_userns, bool compile, int *fd, struct tb_error *err)
{
        _cleanup_close_ int high = -1;
        int r = confine_filter_reserve(&high, err);
        if (r < 0 || (r = filter_fill(high, nested_userns, compile, err)) < 0)
                return r;
        *fd = TAKE_FD(high);
        return 0;
}

int confine_filter_fill(int fd, bool nested_userns, struct tb_error *err)
{
        return filter_fill(fd, nested_userns, false, err);
}

int confine_filter_fd(bool nested_userns, int *fd, struct tb_error *err)
{
        return filter_fd(nested_userns, false, fd, err);
}

int confine_filter_compile_fd(bool nested_userns, int *fd, struct tb_error *err)
{
        return filter_fd(nested_userns, true, fd, err);
}

bool confine_filter_built_in(void)
{
        return built_filter() != NULL;
}

const char *confine_tmpdir(const char *home)
{
        return path_is_under(home, CONFINE_TMPDIR) ? "/tmp" : CONFINE_TMPDIR;
}

int confine_spec(struct sandbox_spec *spec, const struct confine_options *opt, const char *home,
                 struct tb_error *err)
{
        /* A filter made before, for a bwrap started before its options
         * (trial.c): that is the one its line names. */
        if (spec->seccomp_fd <= 0) {
                int r = confine_filter_fd(opt->nested_userns, &spec->seccomp_fd, err);
                if (r < 0)
                        return r;
        }
        spec->disable_userns = opt->bwrap_userns && !opt->nested_userns;
        if (!opt->bwrap_userns)
                sandbox_add(spec, SANDBOX_RO_BIND, "/proc/sys", "/proc/sys");
        const char *tmp = confine_tmpdir(home);
        if (strcmp(tmp, "/tmp") != 0)
                sandbox_add(spec, SANDBOX_TMPFS, NULL, tmp);
        sandbox_setenv(spec, "TMPDIR", tmp, false);
        return 0;
}

/* The fd in argv[i + 1] when argv[i] is `flag`, or -1. */
static int flag_fd(char *const argv[], size_t i, const char *flag)
{
        if (!argv[i] || strcmp(argv[i], flag) != 0 || !argv[i + 1])
                return -1;
        char *end;
        errno = 0;
        long fd = strtol(argv[i + 1], &end, 10);
        if (errno || *end || end == argv[i + 1] || fd < 0 || fd > 65535)
                return -1;
        return (int)fd;
}

/* Where sandbox_argv's --seccomp pair is: argv[1], or right after the
 * supervisor's leading "--block-fd N" pair. */
static size_t seccomp_at(char *const argv[])
{
        return argv[1] && strcmp(argv[1], "--block-fd") == 0 && argv[2] ? 3 : 1;
}

int confine_argv_fd(char *const argv[])
{
        if (!argv[0])
                return -1;
        return flag_fd(argv, seccomp_at(argv), "--seccomp");
}

int confine_argv_args_fd(char *const argv[])
{
        if (confine_argv_fd(argv) < 0)
                return -1;
        return flag_fd(argv, seccomp_at(argv) + 2, "--args");
}

void confine_close_fds(int from, char *const argv[])
{
        const int keep[] = { confine_argv_fd(argv), confine_argv_args_fd(argv) };
        close_fds_except(from, keep, 2);
}

int confine_exec_prepare(char *const argv[])
{
        if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) < 0 && errno != ENOSYS)
                return -errno;
        const int fds[] = { confine_argv_fd(argv), confine_argv_args_fd(argv) };
        for (size_t i = 0; i < 2; i++)
                if (fds[i] >= 0 && fcntl(fds[i], F_SETFD, 0) < 0)
                        return -errno;
        return 0;
}

int confine_check(struct confine_status *st, struct tb_error *err)
{
        *st = (struct confine_status){ 0 };
        errno = 0;
        st->keyrings = syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0) >= 0 || errno != ENOSYS;
        _cleanup_close_ int fd = -1;
        int r = confine_filter_fd(false, &fd, err);
        if (r < 0)
                return r;
        struct stat sb;
        if (fstat(fd, &sb) < 0)
                return tb_fail(err, -errno, "reading the seccomp filter: %s", strerror(errno));
        st->filter_len = (int)(sb.st_size / 8);
        /* The kernel enforces filters when it can tell which actions it has. */
        unsigned action = SECCOMP_RET_ERRNO;
        if (syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) < 0)
                return tb_fail(err, -errno,
                               "the kernel enforces no seccomp filters (%s); use a kernel built with "
                               "CONFIG_SECCOMP_FILTER",
                               strerror(errno));
        st->filter = true;
        return 0;
}
