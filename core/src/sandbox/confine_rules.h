/* The seccomp filter's rules (the list is in sandbox/confine.h), kept apart
 * from the rest of the confinement so that the build can compile them too
 * (sandbox/confine_bpf.h). Internal to sandbox/. */
#ifndef TB_CONFINE_RULES_H
#define TB_CONFINE_RULES_H

#include <seccomp.h>
#include <stdbool.h>

#include "sandbox/confine_bpf.h"

/* How the program finds a call's rule: down a binary tree of the syscall
 * numbers (trialbox's filter), or along a chain of compares (libseccomp's
 * default; bench/filter.sh measures the two side by side). */
enum confine_layout { CONFINE_TREE, CONFINE_CHAIN };

/* Build the filter for `nested_userns` with libseccomp, laid out as
 * `layout` says, and write its BPF program to `fd` (seccomp_export_bpf).
 * 0, or a negative errno with *step naming what failed. */
int confine_rules_export(bool nested_userns, enum confine_layout layout, int fd, const char **step);

/* What the program libseccomp makes of the rules depends on, here and now:
 * the native architecture and libseccomp's version (confine_bpf.h says why
 * not the kernel). Asks the kernel nothing. */
void confine_rules_key(struct confine_bpf_key *key);

#endif
