/* The seccomp filter's rules (sandbox/confine.h lists them) as libseccomp
 * calls: the one place they are written, used by the filter compiled into
 * trialbox when it is built (confine_bpf_gen.c) and by the one compiled at
 * run time where that cannot be used. */
#define _GNU_SOURCE
#include "sandbox/confine_rules.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <linux/netlink.h>

#include "base/macro.h"

struct deny {
        int nr;
        int errnum;
};

static const struct deny always_denied[] = {
        { SCMP_SYS(keyctl), ENOSYS },
        { SCMP_SYS(add_key), ENOSYS },
        { SCMP_SYS(request_key), ENOSYS },
        { SCMP_SYS(bpf), EPERM },
        { SCMP_SYS(perf_event_open), EPERM },
        { SCMP_SYS(userfaultfd), EPERM },
        { SCMP_SYS(kexec_load), EPERM },
        { SCMP_SYS(kexec_file_load), EPERM },
        { SCMP_SYS(init_module), EPERM },
        { SCMP_SYS(finit_module), EPERM },
        { SCMP_SYS(delete_module), EPERM },
        { SCMP_SYS(swapon), EPERM },
        { SCMP_SYS(swapoff), EPERM },
        { SCMP_SYS(reboot), EPERM },
        { SCMP_SYS(acct), EPERM },
        { SCMP_SYS(quotactl), EPERM },
        { SCMP_SYS(syslog), EPERM },
        { SCMP_SYS(uselib), EPERM },
        { SCMP_SYS(open_by_handle_at), EPERM },
        { SCMP_SYS(process_vm_readv), EPERM },
        { SCMP_SYS(process_vm_writev), EPERM },
        { SCMP_SYS(io_uring_setup), ENOSYS },
        { SCMP_SYS(io_uring_enter), ENOSYS },
        { SCMP_SYS(io_uring_register), ENOSYS },
};

/* What a nested sandbox needs inside the user namespace it makes. */
static const struct deny nested_denied[] = {
        { SCMP_SYS(clone3), ENOSYS },
        { SCMP_SYS(mount), EPERM },
        { SCMP_SYS(umount), EPERM },
        { SCMP_SYS(umount2), EPERM },
        { SCMP_SYS(pivot_root), EPERM },
        { SCMP_SYS(open_tree), ENOSYS },
        { SCMP_SYS(move_mount), ENOSYS },
        { SCMP_SYS(fsopen), ENOSYS },
        { SCMP_SYS(fsconfig), ENOSYS },
        { SCMP_SYS(fsmount), ENOSYS },
        { SCMP_SYS(fspick), ENOSYS },
        { SCMP_SYS(mount_setattr), ENOSYS },
};

static void seccomp_releasep(scmp_filter_ctx *ctx)
{
        if (*ctx)
                seccomp_release(*ctx);
}

static int add_arches(scmp_filter_ctx ctx)
{
        static const struct {
                uint32_t native, compat;
        } compat[] = {
                { SCMP_ARCH_X86_64, SCMP_ARCH_X86 },
                { SCMP_ARCH_X86_64, SCMP_ARCH_X32 },
                { SCMP_ARCH_AARCH64, SCMP_ARCH_ARM },
        };
        uint32_t native = seccomp_arch_native();
        for (size_t i = 0; i < TB_ARRAY_SIZE(compat); i++) {
                if (compat[i].native != native)
                        continue;
                int r = seccomp_arch_add(ctx, compat[i].compat);
                if (r < 0 && r != -EEXIST)
                        return r;
        }
        return 0;
}

static int deny_all(scmp_filter_ctx ctx, const struct deny *d, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                int r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(d[i].errnum), d[i].nr, 0);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Calls denied for one value of one argument. */
struct deny_arg {
        int nr;
        unsigned arg;
        scmp_datum_t mask, value;
        int errnum;
        bool userns; /* only when the Harness needs no nested user namespaces */
};

/* An int argument: only its low 32 bits count (a caller may leave garbage
 * above them). clone's flags are its first argument on every architecture
 * add_arches adds (s390 differs, and is not one of them). */
#define LOW32 0xFFFFFFFFu
static const struct deny_arg arg_denied[] = {
        { SCMP_SYS(ptrace), 0, LOW32, PTRACE_ATTACH, EPERM, false },
        { SCMP_SYS(ptrace), 0, LOW32, PTRACE_SEIZE, EPERM, false },
        { SCMP_SYS(ioctl), 1, LOW32, TIOCSTI, EPERM, false },
        { SCMP_SYS(ioctl), 1, LOW32, TIOCLINUX, EPERM, false },
        { SCMP_SYS(unshare), 0, CLONE_NEWUSER, CLONE_NEWUSER, EPERM, true },
        { SCMP_SYS(clone), 0, CLONE_NEWUSER, CLONE_NEWUSER, EPERM, true },
};

static int deny_args(scmp_filter_ctx ctx, bool nested_userns)
{
        for (size_t i = 0; i < TB_ARRAY_SIZE(arg_denied); i++) {
                const struct deny_arg *d = &arg_denied[i];
                if (d->userns && nested_userns)
                        continue;
                struct scmp_arg_cmp cmp = { .arg = d->arg, .op = SCMP_CMP_MASKED_EQ, .datum_a = d->mask, .datum_b = d->value };
                int r = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(d->errnum), d->nr, 1, &cmp);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* One rule: `nr` denied with `errnum` when every comparison holds. */
static int deny_when(scmp_filter_ctx ctx, int nr, int errnum, unsigned n, const struct scmp_arg_cmp *cmp)
{
        return seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(errnum), nr, n, cmp);
}

/* One comparison with every field set: libseccomp's SCMP_A0() leaves
 * datum_b to the compiler's zeroing, which clang's
 * -Wmissing-field-initializers refuses. */
static struct scmp_arg_cmp arg_cmp(unsigned arg, enum scmp_compare op, scmp_datum_t value)
{
        return (struct scmp_arg_cmp){ .arg = arg, .op = op, .datum_a = value, .datum_b = 0 };
}

/* socket() and socketpair(): only the families a session needs. A family
 * is an int, but the comparison is on the whole register: a value with
 * anything above its low 32 bits is at least AF_NETLINK + 1 and refused,
 * which errs on the side of refusing (libc clears those bits). On x86's
 * 32-bit ABI, libseccomp turns these rules into a refusal of every
 * socketcall(SYS_SOCKET) and SYS_SOCKETPAIR (their arguments are in
 * memory): such programs get sockets through the direct calls only. */
static int deny_socket_families(scmp_filter_ctx ctx)
{
        static const int calls[] = { SCMP_SYS(socket), SCMP_SYS(socketpair) };
        for (size_t c = 0; c < TB_ARRAY_SIZE(calls); c++) {
                int r;
                for (scmp_datum_t fam = 0; fam < AF_NETLINK; fam++) {
                        if (fam == AF_UNIX || fam == AF_INET || fam == AF_INET6)
                                continue;
                        const struct scmp_arg_cmp eq = arg_cmp(0, SCMP_CMP_EQ, fam);
                        if ((r = deny_when(ctx, calls[c], EAFNOSUPPORT, 1, &eq)) < 0)
                                return r;
                }
                const struct scmp_arg_cmp above = arg_cmp(0, SCMP_CMP_GT, AF_NETLINK);
                if ((r = deny_when(ctx, calls[c], EAFNOSUPPORT, 1, &above)) < 0)
                        return r;
                /* Netlink: NETLINK_ROUTE (0) alone, what getaddrinfo and `ip` use. */
                const struct scmp_arg_cmp netlink[] = { arg_cmp(0, SCMP_CMP_EQ, AF_NETLINK),
                                                        arg_cmp(2, SCMP_CMP_NE, NETLINK_ROUTE) };
                if ((r = deny_when(ctx, calls[c], EAFNOSUPPORT, 2, netlink)) < 0)
                        return r;
        }
        return 0;
}

/* A mode argument (mode_t: the low 32 bits) with a setuid or setgid bit. */
static const mode_t special_bits[] = { S_ISUID, S_ISGID };

/* chmod, fchmod, fchmodat, fchmodat2 and mknod, mknodat, mkdir, mkdirat,
 * creat: refused when their mode argument sets S_ISUID or S_ISGID. */
static int deny_special_modes(scmp_filter_ctx ctx)
{
        static const struct {
                const char *name;
                unsigned mode_arg;
        } calls[] = {
                { "chmod", 1 },  { "fchmod", 1 },  { "fchmodat", 2 }, { "fchmodat2", 2 }, { "mknod", 1 },
                { "mknodat", 2 }, { "mkdir", 1 }, { "mkdirat", 2 }, { "creat", 1 },
        };
        for (size_t c = 0; c < TB_ARRAY_SIZE(calls); c++) {
                /* By name: fchmodat2 (Linux 6.6) is newer than some headers. */
                int nr = seccomp_syscall_resolve_name(calls[c].name);
                if (nr == __NR_SCMP_ERROR)
                        continue;
                for (size_t b = 0; b < TB_ARRAY_SIZE(special_bits); b++) {
                        const struct scmp_arg_cmp cmp = {
                                .arg = calls[c].mode_arg, .op = SCMP_CMP_MASKED_EQ,
                                .datum_a = special_bits[b], .datum_b = special_bits[b],
                        };
                        int r = deny_when(ctx, nr, EPERM, 1, &cmp);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* open and openat: refused when they create a file (O_CREAT, or O_TMPFILE's
 * own bit) whose mode sets S_ISUID or S_ISGID; without those flags the
 * kernel ignores the mode, and so does the filter. openat2 takes its mode
 * in memory, out of the filter's sight: it is refused whole (ENOSYS;
 * callers fall back to openat). */
static int deny_special_creates(scmp_filter_ctx ctx)
{
        static const struct {
                int nr;
                unsigned flags_arg, mode_arg;
        } calls[] = {
                { SCMP_SYS(open), 1, 2 },
                { SCMP_SYS(openat), 2, 3 },
        };
        static const scmp_datum_t creating[] = { O_CREAT, __O_TMPFILE };
        for (size_t c = 0; c < TB_ARRAY_SIZE(calls); c++)
                for (size_t f = 0; f < TB_ARRAY_SIZE(creating); f++)
                        for (size_t b = 0; b < TB_ARRAY_SIZE(special_bits); b++) {
                                const struct scmp_arg_cmp cmp[] = {
                                        { calls[c].flags_arg, SCMP_CMP_MASKED_EQ, creating[f], creating[f] },
                                        { calls[c].mode_arg, SCMP_CMP_MASKED_EQ, special_bits[b], special_bits[b] },
                                };
                                int r = deny_when(ctx, calls[c].nr, EPERM, 2, cmp);
                                if (r < 0)
                                        return r;
                        }
        return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0);
}

static int build_filter(scmp_filter_ctx ctx, bool nested_userns, const char **step)
{
        int r;
        *step = "adding the compat architectures";
        if ((r = add_arches(ctx)) < 0)
                return r;
        *step = "adding the rules";
        if ((r = deny_all(ctx, always_denied, TB_ARRAY_SIZE(always_denied))) < 0)
                return r;
        if (!nested_userns && (r = deny_all(ctx, nested_denied, TB_ARRAY_SIZE(nested_denied))) < 0)
                return r;
        if ((r = deny_args(ctx, nested_userns)) < 0)
                return r;
        *step = "adding the socket rules";
        if ((r = deny_socket_families(ctx)) < 0)
                return r;
        *step = "adding the setuid rules";
        if ((r = deny_special_modes(ctx)) < 0)
                return r;
        return deny_special_creates(ctx);
}


int confine_rules_export(bool nested_userns, enum confine_layout layout, int fd, const char **step)
{
        __attribute__((cleanup(seccomp_releasep))) scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        *step = "creating the filter";
        if (!ctx)
                return -ENOMEM;
        /* The syscall numbers as a binary tree, not a chain of compares.
         * When bwrap loads the filter, the kernel runs it once for every
         * syscall number of each architecture (its cache of the calls
         * always allowed, seccomp_cache_prepare): along the chain, loading
         * took about 0.32 ms of every Trial's start here, down the tree
         * 0.14 ms (bench/filter.sh). The rules are the same either way:
         * where libseccomp refuses the attribute, it makes the chain. */
        if (layout == CONFINE_TREE)
                (void)seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
        int r = build_filter(ctx, nested_userns, step);
        if (r < 0)
                return r;
        *step = "writing the filter";
        return seccomp_export_bpf(ctx, fd);
}

void confine_rules_key(struct confine_bpf_key *key)
{
        const struct scmp_version *v = seccomp_version();
        *key = (struct confine_bpf_key){
                .arch = seccomp_arch_native(),
                .lib = { v->major, v->minor, v->micro },
        };
}
