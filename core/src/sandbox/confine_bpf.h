/* The seccomp filter compiled when trialbox is built. Building it from the
 * rules with libseccomp is most of what trialbox does before it starts bwrap
 * (millions of instructions), and its result is the same every time on one
 * system: so the build runs the rules through libseccomp once
 * (confine_bpf_gen.c) and puts the two programs it makes (with and without
 * nested user namespaces) into trialbox, read-only, with the key they were
 * made under: the architecture and libseccomp's version. At run time the
 * built program is used only when the key is this system's
 * (sandbox/confine_rules.h); elsewhere (another libseccomp, a cross-compiled
 * build) the filter is compiled from the rules, as before. Nothing is
 * cached in a file that someone else, or a session, could write.
 *
 * The kernel is not part of the key: libseccomp asks it only whether each
 * action a rule uses is available (gen_bpf.c and db.c, 2.5), and the
 * filter's actions (allow, errno, and the default kill of another ABI's
 * calls) always are; syscall numbers are the architecture's ABI. */
#ifndef TB_CONFINE_BPF_H
#define TB_CONFINE_BPF_H

#include <stddef.h>
#include <stdint.h>

struct confine_bpf_key {
        uint32_t arch;   /* seccomp_arch_native(): an AUDIT_ARCH_* value */
        unsigned lib[3]; /* libseccomp's major, minor, micro version */
};

struct confine_bpf {
        struct confine_bpf_key key; /* key.arch 0: nothing was compiled (a cross build) */
        const unsigned char *prog[2]; /* [nested_userns]: the BPF program, as seccomp_export_bpf writes it */
        size_t len[2];
};

/* Made by the build (confine_bpf_gen.c writes its source). */
extern const struct confine_bpf confine_bpf_built;

#endif
