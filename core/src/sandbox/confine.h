/* Confinement of the session beyond its mounts: what of the kernel it may
 * reach. A seccomp filter (libseccomp, handed to bwrap as --seccomp FD),
 * nested user namespaces only for a Harness that runs its own sandbox
 * (--disable-userns where bwrap makes a user namespace, the filter where it
 * does not), a fresh anonymous session keyring, and a TMPDIR that is never a
 * prefix of the session's home.
 *
 * The filter denies, whatever the Harness:
 *   keyctl, add_key, request_key                       ENOSYS (as a kernel without keys)
 *   bpf, perf_event_open, userfaultfd                  EPERM  (as when their sysctls forbid them)
 *   kexec_load, kexec_file_load, init_module, finit_module, delete_module,
 *   swapon, swapoff, reboot, acct, quotactl, syslog, uselib,
 *   open_by_handle_at, process_vm_readv, process_vm_writev   EPERM
 *   io_uring_setup, io_uring_enter, io_uring_register  ENOSYS (callers fall back to plain calls)
 *   ptrace(PTRACE_ATTACH), ptrace(PTRACE_SEIZE)        EPERM
 *   ioctl(TIOCSTI), ioctl(TIOCLINUX)                   EPERM  (no typing into a terminal)
 *   socket, socketpair of any family but AF_UNIX, AF_INET, AF_INET6 and
 *     AF_NETLINK with NETLINK_ROUTE (vsock, packet, bluetooth, alg, key,
 *     can, xdp, other netlink protocols, ...)          EAFNOSUPPORT (as a kernel without them)
 *   chmod, fchmod, fchmodat, fchmodat2, mknod, mknodat, mkdir, mkdirat,
 *     creat with S_ISUID or S_ISGID in the mode; open, openat creating a
 *     file (O_CREAT, O_TMPFILE) with either             EPERM  (no setuid file from a session)
 *   openat2                                            ENOSYS (its mode is in memory; callers
 *                                                      fall back to openat)
 * and, unless the Harness needs nested user namespaces:
 *   unshare and clone with CLONE_NEWUSER               EPERM
 *   clone3                                             ENOSYS (its flags are in memory, out of
 *                                                      the filter's reach; libc falls back to clone)
 *   mount, umount2, pivot_root                         EPERM
 *   open_tree, move_mount, fsopen, fsconfig, fsmount, fspick, mount_setattr
 *                                                      ENOSYS (callers fall back to mount(2))
 * A Harness that runs its own bwrap needs the mount calls inside the user
 * namespace it makes; they give nothing outside it (no capabilities there).
 *
 * ENOSYS where programs probe a feature and fall back (a kernel may lack it);
 * EPERM where the kernel itself answers EPERM when the feature is forbidden,
 * so programs already handle it.
 *
 * ptrace "of its own children only" cannot be said in seccomp (it sees
 * numbers, not process relations): attaching to a running process is
 * denied, while PTRACE_TRACEME and requests on a tracee stay allowed, so
 * debuggers that fork and trace their child (gdb, lldb) work; `strace CMD`
 * (which seizes its child) and `gdb -p` do not. The pid namespace already
 * hides every process but the session's own.
 *
 * The socket family and the modes are compared as the whole register: a
 * family with bits set above its 32 is refused (libc never passes one).
 *
 * Architectures: the native one, plus its 32-bit compat ABIs (x86 and x32
 * on x86_64, arm on aarch64) with the same rules, so a 32-bit program runs
 * and is confined alike (on x86, socketcall's SYS_SOCKET and SYS_SOCKETPAIR
 * carry their family in memory and are refused: a 32-bit program gets its
 * sockets through the direct calls); a call from any other ABI kills the
 * caller. */
#ifndef TB_CONFINE_H
#define TB_CONFINE_H

#include <stdbool.h>

#include "sandbox/spec.h"
#include "base/error.h"

/* The session's temp folder when the home does not lie under it: a private
 * tmpfs of its own, outside /tmp, where an output folder under /tmp puts
 * the home (Codex refuses helper binaries under the temp folder). */
#define CONFINE_TMPDIR "/sandbox/tmp"

struct confine_options {
        bool nested_userns; /* the Harness runs its own sandbox (plugin_needs_userns) */
        bool bwrap_userns;  /* bwrap runs unprivileged, so it makes a user namespace */
};

/* Build the filter for `nested_userns` as a BPF program in a sealed memfd,
 * positioned at its start, close-on-exec, numbered above every fd the
 * keeper places (SANDBOX_STATUS_FD + 1). On success *fd owns it. Returns 0
 * or a negative errno (err says which step failed). The program is the one
 * compiled when trialbox was built when that was made under this system's
 * key (sandbox/confine_bpf.h), else compiled from the rules now. */
int confine_filter_fd(bool nested_userns, int *fd, struct tb_error *err);

/* The same in two steps, for a bwrap started before the plugin is loaded
 * (its line names the fd; it reads the program only once its options have
 * come: bubblewrap's main() reads --seccomp's fd after parse_args, which
 * reads --args, and after --block-fd's byte, in 0.8 as in later ones): an
 * empty, unsealed memfd placed as above, into *fd (0, or a negative
 * errno); then the program written into it, sealed, and its offset back at
 * its start (0, or a negative errno), before bwrap's options are sent. */
int confine_filter_reserve(int *fd, struct tb_error *err);
int confine_filter_fill(int fd, bool nested_userns, struct tb_error *err);

/* The same, always compiled from the rules now (what the built program must
 * equal: the tests compare them). */
int confine_filter_compile_fd(bool nested_userns, int *fd, struct tb_error *err);

/* Whether confine_filter_fd uses the program compiled when trialbox was
 * built (true) or compiles the rules at each run (another libseccomp or
 * kernel seccomp API level than the build's, or a cross build). */
bool confine_filter_built_in(void);

/* Apply the confinement to a sandboxed spec whose home is `home`: the filter
 * (spec->seccomp_fd), spec->disable_userns, /proc/sys read-only when bwrap
 * makes no user namespace (with one, the kernel already refuses the writes,
 * and the cover would make a nested sandbox's fresh proc mount fail), and
 * TMPDIR on a private tmpfs (confine_tmpdir). Call after every bind is in
 * place. A filter fd already in spec->seccomp_fd (made with
 * confine_filter_fd for a bwrap started early) is kept. Returns 0 or a
 * negative errno. */
int confine_spec(struct sandbox_spec *spec, const struct confine_options *opt, const char *home,
                 struct tb_error *err);

/* The session's TMPDIR for `home`: CONFINE_TMPDIR, or /tmp when the home
 * lies under CONFINE_TMPDIR. Never a prefix of the home. Static string. */
const char *confine_tmpdir(const char *home);

/* The fd sandbox_argv passes with --seccomp (argv[1] and argv[2], or right
 * after the supervisor's leading "--block-fd N" pair),
 * or -1. */
int confine_argv_fd(char *const argv[]);

/* The fd of an "--args N" pair right after that --seccomp pair (a bwrap
 * started before its options are known: supervisor_start_early), or -1. */
int confine_argv_args_fd(char *const argv[]);

/* Close every fd from `from` on, but the ones confine_argv_fd(argv) and
 * confine_argv_args_fd(argv) name. */
void confine_close_fds(int from, char *const argv[]);

/* In bwrap's own process, just before its exec: join a fresh anonymous
 * session keyring (nothing of trialbox's keyring reaches the session), and
 * let the filter fd (and the options' fd) argv names cross the exec. A kernel without keyrings
 * has nothing to hide. Returns 0, or a negative errno (the caller reports
 * it as an exec failure: no session starts unconfined). */
int confine_exec_prepare(char *const argv[]);

/* For `trialbox check`: whether a Trial here would be confined. */
struct confine_status {
        bool filter;   /* the filter builds for this architecture and the kernel enforces filters */
        bool keyrings; /* the kernel has keyrings (so a fresh one is joined); false: nothing to hide */
        int filter_len; /* its BPF instructions */
};

/* Fill `st`. Returns 0, or a negative errno when no filter can be had
 * here (err says why and what to do). */
int confine_check(struct confine_status *st, struct tb_error *err);

#endif
