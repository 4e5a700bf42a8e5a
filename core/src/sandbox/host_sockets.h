/* The host's unix sockets in the folders a session sees. A read-only bind
 * does not stop connect(): a socket file is not written to, so a daemon's
 * socket under a bound folder (a PATH folder, a toolchain, /usr, the
 * skills, the repository) would answer a session even in a network
 * namespace of its own (`--network none`): pathname sockets are found by
 * their file, not through the network namespace. Abstract sockets are per
 * network namespace and need nothing here.
 *
 * How they are found, cheaply: the kernel lists the sockets bound in
 * trialbox's network namespace, with the device and inode of each one's
 * file (NETLINK_SOCK_DIAG, UDIAG_SHOW_VFS), so no folder is walked; as
 * root, those of every other network namespace a process is in too (a
 * container's daemon; the kernel's threads, kthreadd's children, are not
 * asked: they are in the initial one), each asked through a diagnosis
 * socket made there:
 * trialbox's thread joins the namespace for that one call and comes back
 * (it aborts rather than go on in another). A
 * socket whose file is at the path it was bound to is placed there. One
 * that is not (bound by a relative path, moved, hard-linked elsewhere, or
 * bound in another mount namespace) sends trialbox walking every bound
 * folder on its file system, where each socket file found is masked; so
 * does a kernel that cannot list its sockets. Not run as root, sockets
 * bound in another network namespace are not listed; and a socket bound
 * after trialbox listed them (as it starts) is not masked: the caller's
 * docs say so.
 *
 * Each socket file is covered by /dev/null (connect: ECONNREFUSED) right
 * after every bind that shows it, as the secret places are. */
#ifndef TB_HOST_SOCKETS_H
#define TB_HOST_SOCKETS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "sandbox/spec.h"

struct host_sockets_report {
        size_t listed;  /* pathname sockets the kernel listed (0 when it could not) */
        size_t masked;  /* masks added to the spec */
        bool walked;    /* bound folders were walked (a socket not at its path, or no list) */
        bool no_list;   /* the kernel could not list its sockets (no unix_diag) */
        bool in_line;   /* listed by the mask itself, not by the early thread */
};

/* The kernel's list, asked for early: a thread of its own lists the
 * sockets while trialbox builds the spec (as root, the other namespaces'
 * take a few tenths of a millisecond), on a CPU other than the caller's.
 * Whoever comes first lists them: the thread as it starts, or the mask
 * when it needs the list (every other CPU was busy, and the thread has
 * not run yet); the other does nothing, so the list is made once and a
 * CPU taken meanwhile pays only the thread's start. Every signal is
 * blocked in that thread. NULL when trialbox may use no other CPU, when
 * it was told every CPU is busy and none looks idle (base/cpus.h: the
 * thread would only wait its turn), when it is not root (the list is then
 * this namespace's alone: cheaper in line than a thread's start), or no
 * thread could be started: the mask then lists them itself.
 * host_sockets_start_thread() starts it whatever the CPUs (for the tests). */
struct host_sockets_early;
struct host_sockets_early *host_sockets_start(void);
struct host_sockets_early *host_sockets_start_thread(void);
/* Join the thread and free `early` and what is left of its list (all of
 * it, for a Trial that ends before its sockets are masked). NULL is
 * fine. */
void host_sockets_early_free(struct host_sockets_early *early);

/* Which network namespaces' sockets a pass of host_sockets_mask asks. */
enum host_sockets_scope {
        HOST_SOCKETS_ALL,    /* this one's, and as root every other one's */
        HOST_SOCKETS_HERE,   /* this one's */
        HOST_SOCKETS_OTHERS, /* as root, every other one's (none otherwise) */
};

/* Whether the list asks the other network namespaces too (as root: a walk
 * of /proc, a few tenths of a millisecond). */
bool host_sockets_lists_others(void);

/* Mask every host socket a bind of `spec` shows (see above), of the
 * namespaces `scope` names: for HOST_SOCKETS_ALL, from the list `early`
 * made (its list taken; `early` is still the caller's to free), or one
 * made now when it is NULL (`early` is not used for the others). Call it
 * when the spec has all its binds, after toolchain_mask_secrets(): once
 * for all of them, or once for HERE and then once for OTHERS (a mask the
 * spec has after the bind already is not added again, so rep->masked of
 * the second pass counts what the first did not cover). Never fails:
 * what it could not do is in `rep`. */
void host_sockets_mask(struct sandbox_spec *spec, struct host_sockets_early *early, enum host_sockets_scope scope,
                       struct host_sockets_report *rep);

/* The pathname unix sockets bound in this network namespace (the
 * kernel's list), and, as root, in every other one a process is in: one
 * (device, inode, path) per socket file. Returns how many, or a negative
 * errno when the kernel cannot list this namespace's. Exposed for the
 * tests. */
struct host_socket {
        unsigned long long dev, ino; /* ino: its low 32 bits (the kernel's list has no more) */
        char *path;                  /* as bound: may be relative, or no longer name it */
};
int host_sockets_list(struct host_socket **out);
void host_sockets_free(struct host_socket *v, size_t n);

/* The kernel's threads that the list above skips: kthreadd (pid 2) and
 * its children, sorted (*out malloc'd); 0 and NULL when pid 2 is not the
 * kernel's (trialbox in a pid namespace) or its children cannot be read.
 * Exposed for the tests. */
size_t host_sockets_kernel_threads(pid_t **out);

#endif
