#define _GNU_SOURCE
#include "sandbox/host_sockets.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/cpus.h"
#include "base/fileio.h"
#include "base/io.h"
#include "base/log.h"
#include "base/path.h"
#include "base/phase.h"
#include "base/strbuf.h"

#define WALK_DEPTH_MAX 256 /* deeper than any real tree; past it, the folder is masked whole */

void host_sockets_free(struct host_socket *v, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(v[i].path);
        free(v);
}

/* The kernel's dev_t (major << 20 | minor) as st_dev has it. */
static unsigned long long dev_from_kernel(uint32_t kdev)
{
        return makedev(kdev >> 20, kdev & 0xfffff);
}

/* Append a socket file to *v, once (a listener's accepted sockets share its name). */
static void add_socket(struct host_socket **v, size_t *n, size_t *cap, unsigned long long dev, unsigned long long ino,
                       const char *path)
{
        for (size_t i = 0; i < *n; i++)
                if ((*v)[i].ino == ino && (*v)[i].dev == dev)
                        return;
        GREEDY_REALLOC(*v, *cap, *n + 1);
        (*v)[(*n)++] = (struct host_socket){ .dev = dev, .ino = ino, .path = xstrdup(path) };
}

/* One message of the dump: its name (a pathname, not abstract) and its
 * file's identity, appended to *v. */
static void take_socket(const struct unix_diag_msg *m, size_t len, struct host_socket **v, size_t *n, size_t *cap)
{
        const char *name = NULL;
        size_t name_len = 0;
        const struct unix_diag_vfs *vfs = NULL;
        size_t rest = len - NLMSG_ALIGN(sizeof(*m));
        for (const struct rtattr *a = (const void *)((const char *)m + NLMSG_ALIGN(sizeof(*m))); RTA_OK(a, rest);
             a = RTA_NEXT(a, rest)) {
                if (a->rta_type == UNIX_DIAG_NAME) {
                        name = RTA_DATA(a);
                        name_len = RTA_PAYLOAD(a);
                } else if (a->rta_type == UNIX_DIAG_VFS && RTA_PAYLOAD(a) >= sizeof(*vfs)) {
                        vfs = RTA_DATA(a);
                }
        }
        if (!name || name_len == 0 || name[0] == '\0' || !vfs)
                return; /* unnamed, abstract, or no file */
        _cleanup_free_ char *path = strndup(name, strnlen(name, name_len));
        add_socket(v, n, cap, dev_from_kernel(vfs->udiag_vfs_dev), vfs->udiag_vfs_ino, path);
}

/* Read the dump's answers until NLMSG_DONE. 0, or a negative errno. */
static int read_dump(int fd, struct host_socket **v, size_t *n, size_t *cap)
{
        _cleanup_free_ char *buf = xmalloc(32768);
        for (;;) {
                ssize_t got = RETRY_EINTR(recv(fd, buf, 32768, 0));
                if (got <= 0)
                        return got < 0 ? -errno : -EIO;
                size_t left = (size_t)got;
                for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
                        if (h->nlmsg_type == NLMSG_DONE)
                                return 0;
                        if (h->nlmsg_type == NLMSG_ERROR) {
                                const struct nlmsgerr *e = NLMSG_DATA(h);
                                return h->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) && e->error < 0 ? e->error : -EIO;
                        }
                        if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
                            h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct unix_diag_msg)))
                                take_socket(NLMSG_DATA(h), h->nlmsg_len - NLMSG_HDRLEN, v, n, cap);
                }
        }
}

/* The kernel's socket-diagnosis socket, of the network namespace this
 * thread is in. An fd, or -errno. */
static int diag_socket(void)
{
        int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
        return fd < 0 ? -errno : fd;
}

/* The sockets of the network namespace `fd` (a diag_socket) was made in,
 * into *v. 0 or -errno. */
static int list_by(int fd, struct host_socket **v, size_t *n, size_t *cap)
{
        struct {
                struct nlmsghdr h;
                struct unix_diag_req r;
        } req = {
                .h = { .nlmsg_len = sizeof(req), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
                       .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = 1 },
                .r = { .sdiag_family = AF_UNIX, .udiag_states = ~0U, .udiag_show = UDIAG_SHOW_NAME | UDIAG_SHOW_VFS },
        };
        struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
        if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
                return -errno;
        return read_dump(fd, v, n, cap);
}

/* A diag_socket of the network namespace `ns_path` names: this thread
 * joins it for the one socket() call and comes back to `own` (its own
 * namespace's fd). The socket keeps the namespace it was made in, and
 * nothing but the kernel answers it: no child, no code of that
 * namespace's. An fd, or -errno (the namespace gone, or not joinable). */
static int diag_socket_in(const char *ns_path, int own)
{
        _cleanup_close_ int ns = open(ns_path, O_RDONLY | O_CLOEXEC);
        if (ns < 0)
                return -errno;
        if (setns(ns, CLONE_NEWNET) < 0)
                return -errno;
        int fd = diag_socket();
        /* Everything after this (the proxy's listener, the session's
         * namespace) must be made in trialbox's own: never go on elsewhere. */
        if (setns(own, CLONE_NEWNET) < 0)
                abort();
        return fd;
}

/* The sockets of the network namespace `ns_path` names, into *v. A
 * namespace that cannot be asked (its processes gone) adds nothing. */
static void list_there(const char *ns_path, int own, struct host_socket **v, size_t *n, size_t *cap)
{
        _cleanup_close_ int fd = diag_socket_in(ns_path, own);
        if (fd >= 0)
                (void)list_by(fd, v, n, cap);
}

/* The network namespace's inode that the link `path` (relative to `dirfd`)
 * names, "net:[INODE]", or 0. Reading the link is about half the cost of a
 * stat(2) through it, which makes the kernel find the namespace's file. */
static unsigned long long netns_inode(int dirfd, const char *path)
{
        char buf[64];
        ssize_t n = readlinkat(dirfd, path, buf, sizeof buf - 1);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        if (strncmp(buf, "net:[", 5) != 0 || buf[5] < '0' || buf[5] > '9')
                return 0;
        char *end;
        unsigned long long ino = strtoull(buf + 5, &end, 10);
        return strcmp(end, "]") == 0 ? ino : 0;
}

static int cmp_pid(const void *a, const void *b)
{
        pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
        return (x > y) - (x < y);
}

#define PF_KTHREAD_FLAG 0x00200000u /* include/linux/sched.h: "I am a kernel thread" */

/* Whether the kernel says process `pid` is one of its threads (the flags
 * field of its stat, the ninth: after the command's closing parenthesis,
 * which the command itself cannot fake, being the last one). */
static bool is_kernel_thread(pid_t pid)
{
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        _cleanup_free_ char *stat = read_file(path, 4096, NULL);
        const char *paren = stat ? strrchr(stat, ')') : NULL;
        unsigned flags = 0;
        return paren && sscanf(paren + 1, " %*c %*d %*d %*d %*d %*d %u", &flags) == 1 && (flags & PF_KTHREAD_FLAG);
}

size_t host_sockets_kernel_threads(pid_t **out)
{
        *out = NULL;
        /* kthreadd is pid 2 where trialbox sees the host's pids (in a pid
         * namespace of its own, pid 2 is a process like any other: then
         * nothing is skipped). */
        if (!is_kernel_thread(2))
                return 0;
        size_t len = 0;
        _cleanup_free_ char *list = read_file("/proc/2/task/2/children", 16u << 20, &len);
        if (!list)
                return 0;
        pid_t *v = NULL;
        size_t n = 0, cap = 0;
        GREEDY_REALLOC(v, cap, 1);
        v[n++] = 2;
        for (char *p = list, *end; *p; p = end) {
                long pid = strtol(p, &end, 10);
                if (end == p)
                        break;
                GREEDY_REALLOC(v, cap, n + 1);
                v[n++] = (pid_t)pid;
        }
        qsort(v, n, sizeof *v, cmp_pid);
        *out = v;
        return n;
}

/* As root only: joining another network namespace needs CAP_SYS_ADMIN there. */
bool host_sockets_lists_others(void) { return geteuid() == 0; }

/* As root, every other network namespace a process is in: a container's
 * daemon may write its socket into a folder a Trial sees, and the kernel
 * lists each namespace's sockets to its own. kthreadd's children are not
 * asked: the kernel's threads, with its namespaces (the initial ones), on
 * a machine of many CPUs most of /proc; and the user-mode helpers the
 * kernel starts with kthreadd as their parent (kernel/umh.c: a modprobe,
 * a core dump's pipe), which start in those namespaces too. */
static void list_other_namespaces(struct host_socket **v, size_t *n, size_t *cap)
{
        if (!host_sockets_lists_others())
                return;
        /* This thread's namespace: the one it comes back to. */
        _cleanup_close_ int own = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
        unsigned long long own_ino = netns_inode(AT_FDCWD, "/proc/thread-self/ns/net");
        _cleanup_closedir_ DIR *proc = opendir("/proc");
        if (own < 0 || own_ino == 0 || !proc)
                return;
        _cleanup_free_ unsigned long long *seen = NULL;
        size_t n_seen = 0, cap_seen = 0;
        _cleanup_free_ pid_t *kthreads = NULL;
        size_t n_kthreads = host_sockets_kernel_threads(&kthreads);
        for (struct dirent *e; (e = readdir(proc));) {
                if (e->d_name[0] < '1' || e->d_name[0] > '9' || strspn(e->d_name, "0123456789") != strlen(e->d_name))
                        continue;
                pid_t pid = (pid_t)strtol(e->d_name, NULL, 10);
                if (n_kthreads && bsearch(&pid, kthreads, n_kthreads, sizeof pid, cmp_pid))
                        continue;
                char ns_path[300];
                snprintf(ns_path, sizeof ns_path, "%s/ns/net", e->d_name);
                unsigned long long ino = netns_inode(dirfd(proc), ns_path);
                if (ino == 0 || ino == own_ino)
                        continue;
                bool known = false;
                for (size_t i = 0; i < n_seen && !known; i++)
                        known = seen[i] == ino;
                if (known)
                        continue;
                GREEDY_REALLOC(seen, cap_seen, n_seen + 1);
                seen[n_seen++] = ino;
                snprintf(ns_path, sizeof ns_path, "/proc/%s/ns/net", e->d_name);
                list_there(ns_path, own, v, n, cap);
        }
}

/* The list of the namespaces `scope` names, into *out: how many, or a
 * negative errno when this namespace's was asked for and the kernel
 * cannot list it (another namespace that cannot be asked adds nothing). */
static int list_scope(enum host_sockets_scope scope, struct host_socket **out)
{
        struct host_socket *v = NULL;
        size_t n = 0, cap = 0;
        if (scope != HOST_SOCKETS_OTHERS) {
                _cleanup_close_ int fd = diag_socket();
                int r = fd < 0 ? fd : list_by(fd, &v, &n, &cap);
                if (r < 0) {
                        host_sockets_free(v, n);
                        return r;
                }
                TB_PHASE("sockets_here");
        }
        if (scope != HOST_SOCKETS_HERE) {
                list_other_namespaces(&v, &n, &cap);
                TB_PHASE("sockets_others");
        }
        *out = v;
        return (int)n;
}

int host_sockets_list(struct host_socket **out) { return list_scope(HOST_SOCKETS_ALL, out); }

/* Who lists: whichever comes first, the thread as it starts or the mask
 * when it needs the list; the other does none of it. */
enum early_by { EARLY_NOBODY, EARLY_THREAD, EARLY_MAIN };

struct host_sockets_early {
        pthread_t thread;
        cpu_set_t cpus;  /* trialbox's CPUs; the thread started on the others */
        bool narrowed;   /* it was */
        bool joined;
        _Atomic int by;  /* enum early_by */
        struct host_socket *v; /* the thread's list */
        int n;                 /* how many, or -errno */
};

static void *list_early(void *arg)
{
        struct host_sockets_early *e = arg;
        int nobody = EARLY_NOBODY;
        if (!atomic_compare_exchange_strong(&e->by, &nobody, EARLY_THREAD))
                return NULL; /* the mask came first and listed them itself */
        TB_PHASE("thread_start");
        e->n = host_sockets_list(&e->v);
        return NULL;
}

struct host_sockets_early *host_sockets_start(void)
{
        /* Whenever trialbox may use another CPU; once told every one is
         * busy (a batch running as many Trials as it has CPUs, or more),
         * only when one looks idle this moment: started every time there,
         * the thread would mostly wait its turn, and its start and its
         * sharing of trialbox's memory across CPUs cost a batch of no-op
         * Trials 4% (bench/batch.sh). Outside a batch, the moment is no
         * guide: another CPU looked idle for 15 to 30 Trials in 100
         * started one after another on a 2-CPU machine (what ran was the
         * starter about to wait, a kernel thread), so most listed in line;
         * started anyway, the thread began in time for 97 in 100, and the
         * keeper started 0.3 ms sooner. When the other CPU is taken after
         * all, the mask lists them itself and the thread, once it runs,
         * does nothing. (With bwrap started early, trial.c starts none:
         * the other namespaces' list waits until bwrap has its options.) */
        /* Only when the list asks every other network namespace too (a
         * walk of /proc, some 0.25 ms); otherwise it is this one's alone
         * (some 0.04 ms), less than starting the thread costs this one (a
         * dry run as nobody 0.085 ms sooner with the list in line). */
        if (!host_sockets_lists_others())
                return NULL;
        cpu_set_t all, others;
        return cpus_other_free(&all, &others) ? host_sockets_start_thread() : NULL;
}

struct host_sockets_early *host_sockets_start_thread(void)
{
        struct host_sockets_early *e = xmalloc(sizeof(*e));
        *e = (struct host_sockets_early){ .n = -EAGAIN };
        atomic_init(&e->by, EARLY_NOBODY);
        /* Every signal blocked in the thread (it inherits the mask): each
         * one trialbox handles is read by its main thread. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        /* On a CPU other than this thread's, where it runs at once when
         * that CPU is idle: left to the scheduler, a new thread waits on
         * this CPU until this one blocks (seen here: the listing done only
         * at the join). */
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        cpu_set_t others;
        if (cpus_others(&e->cpus, &others))
                e->narrowed = pthread_attr_setaffinity_np(&attr, sizeof others, &others) == 0;
        int r = pthread_create(&e->thread, &attr, list_early, e);
        pthread_attr_destroy(&attr);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r != 0) {
                free(e);
                return NULL;
        }
        return e;
}

/* Wait for the thread's end (it has nothing left to do, or is listing). */
static void early_join(struct host_sockets_early *e)
{
        if (e->joined)
                return;
        /* Every CPU again, this one too: with the others busy (a batch), it
         * finishes or returns here while this thread waits. Fails
         * harmlessly when it has ended. */
        if (e->narrowed)
                (void)pthread_setaffinity_np(e->thread, sizeof e->cpus, &e->cpus);
        pthread_join(e->thread, NULL);
        e->joined = true;
}

/* The list, into *v: the thread's, once it has ended, when it began
 * first; else made here and now, and the thread, whenever it runs, does
 * nothing (it is joined later, by host_sockets_early_free: by then it has
 * long returned). How many, or -errno; *in_line whether it was made here. */
static int early_take(struct host_sockets_early *e, struct host_socket **v, bool *in_line)
{
        int nobody = EARLY_NOBODY;
        *in_line = atomic_compare_exchange_strong(&e->by, &nobody, EARLY_MAIN);
        if (*in_line)
                return host_sockets_list(v);
        early_join(e);
        *v = TAKE_PTR(e->v);
        int n = e->n;
        e->n = 0;
        return n;
}

void host_sockets_early_free(struct host_sockets_early *early)
{
        if (!early)
                return;
        /* Not listed yet (a Trial void before its spec was done): the
         * thread need not begin. */
        int nobody = EARLY_NOBODY;
        (void)atomic_compare_exchange_strong(&early->by, &nobody, EARLY_MAIN);
        early_join(early);
        host_sockets_free(early->v, early->n > 0 ? (size_t)early->n : 0);
        free(early);
}

/* ---- the spec ---- */

/* Where the host path `real` appears in the sandbox through `op`, when the
 * op binds it or a folder that contains it. malloc'd, or NULL. */
static char *seen_through(const struct sandbox_op *op, const char *real)
{
        if ((op->kind != SANDBOX_RO_BIND && op->kind != SANDBOX_BIND) || !path_is_under(real, op->src))
                return NULL;
        const char *rest = strcmp(op->src, "/") == 0 ? real : real + strlen(op->src);
        return strcmp(op->dest, "/") == 0 ? xstrdup(rest[0] ? rest : "/") : xasprintf("%s%s", op->dest, rest);
}

/* Cover `dest` with `kind` (a /dev/null bind, or a tmpfs: src NULL) right
 * after op `i`, unless the same cover comes after op `i` already (one an
 * earlier pass made: it covers `dest` from a later place, so one here
 * would cover nothing more). */
static void cover_after(struct sandbox_spec *spec, size_t i, enum sandbox_op_kind kind, const char *src,
                        const char *dest, struct host_sockets_report *rep)
{
        for (size_t j = i + 1; j < spec->n_ops; j++) {
                const struct sandbox_op *op = &spec->ops[j];
                if (op->kind == kind && strcmp(op->dest, dest) == 0 &&
                    (src ? op->src && strcmp(op->src, src) == 0 : !op->src))
                        return;
        }
        sandbox_insert(spec, i + 1, kind, src, dest);
        rep->masked++;
}

/* Cover `dest` with /dev/null right after op `i` (cover_after). */
static void mask_after(struct sandbox_spec *spec, size_t i, const char *dest, struct host_sockets_report *rep)
{
        cover_after(spec, i, SANDBOX_RO_BIND, "/dev/null", dest, rep);
}

/* The socket's real path when its file is at the path it was bound to,
 * and only there (one link). malloc'd, or NULL. */
static char *placed_at(const struct host_socket *s)
{
        struct stat st;
        if (s->path[0] != '/' || lstat(s->path, &st) < 0 || !S_ISSOCK(st.st_mode) || st.st_nlink != 1 ||
            st.st_dev != s->dev || (uint32_t)st.st_ino != (uint32_t)s->ino)
                return NULL;
        _cleanup_free_ char *dir = path_dirname(s->path);
        _cleanup_free_ char *real_dir = realpath(dir, NULL);
        if (!real_dir)
                return NULL;
        const char *base = strrchr(s->path, '/') + 1;
        return xasprintf("%s/%s", strcmp(real_dir, "/") == 0 ? "" : real_dir, base);
}

/* Every socket file under the folder `fd` (owned; its sandbox path is
 * `dest`) is covered after op `i`, depth first. */
static void walk(struct sandbox_spec *spec, size_t i, int fd, struct strbuf *dest, int depth,
                 struct host_sockets_report *rep)
{
        _cleanup_closedir_ DIR *d = fdopendir(fd);
        if (!d) {
                close(fd);
                return;
        }
        if (depth > WALK_DEPTH_MAX) {
                cover_after(spec, i, SANDBOX_TMPFS, NULL, dest->s, rep);
                return;
        }
        size_t len = dest->len;
        for (struct dirent *e; (e = readdir(d));) {
                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                        continue;
                unsigned char type = e->d_type;
                if (type == DT_UNKNOWN) {
                        struct stat st;
                        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                                continue;
                        type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISSOCK(st.st_mode) ? DT_SOCK : DT_REG;
                }
                if (type != DT_DIR && type != DT_SOCK)
                        continue;
                strbuf_addf(dest, "%s%s", len && dest->s[len - 1] == '/' ? "" : "/", e->d_name);
                if (type == DT_SOCK) {
                        mask_after(spec, i, dest->s, rep);
                } else {
                        int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub >= 0)
                                walk(spec, i, sub, dest, depth + 1, rep);
                }
                dest->len = len;
                dest->s[len] = '\0';
        }
}

/* Walk op `i`'s source when it is a folder on one of the devices `devs`
 * (all of them when n_devs is 0). */
static void walk_op(struct sandbox_spec *spec, size_t i, const unsigned long long *devs, size_t n_devs,
                    struct host_sockets_report *rep)
{
        const struct sandbox_op *op = &spec->ops[i];
        if (op->kind != SANDBOX_RO_BIND && op->kind != SANDBOX_BIND)
                return;
        int fd = open(op->src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0) {
                if (fd >= 0)
                        close(fd);
                return;
        }
        bool on_dev = n_devs == 0;
        for (size_t k = 0; k < n_devs && !on_dev; k++)
                on_dev = devs[k] == st.st_dev;
        if (!on_dev) {
                close(fd);
                return;
        }
        struct strbuf dest = { 0 };
        strbuf_add(&dest, op->dest);
        walk(spec, i, fd, &dest, 0, rep);
        free(dest.s);
}

void host_sockets_mask(struct sandbox_spec *spec, struct host_sockets_early *early, enum host_sockets_scope scope,
                       struct host_sockets_report *rep)
{
        *rep = (struct host_sockets_report){ 0 };
        struct host_socket *v = NULL;
        bool in_line = true;
        /* The thread lists them all: it is for a whole pass only. */
        int n = early && scope == HOST_SOCKETS_ALL ? early_take(early, &v, &in_line) : list_scope(scope, &v);
        rep->in_line = in_line;
        if (n < 0) {
                log_info("the kernel does not list its unix sockets (%s): walking the bound folders for them",
                         strerror(-n));
                rep->no_list = rep->walked = true;
                for (size_t i = spec->n_ops; i-- > 0;)
                        walk_op(spec, i, NULL, 0, rep);
                return;
        }
        rep->listed = (size_t)n;
        _cleanup_free_ unsigned long long *lost = xmalloc(((size_t)n + 1) * sizeof(*lost));
        size_t n_lost = 0;
        for (int k = 0; k < n; k++) {
                _cleanup_free_ char *real = placed_at(&v[k]);
                if (!real) {
                        lost[n_lost++] = v[k].dev;
                        continue;
                }
                /* From the last op down, so an insert never moves an op not yet seen. */
                for (size_t i = spec->n_ops; i-- > 0;) {
                        _cleanup_free_ char *dest = seen_through(&spec->ops[i], real);
                        if (dest)
                                mask_after(spec, i, dest, rep);
                }
        }
        if (n_lost > 0) {
                rep->walked = true;
                for (size_t i = spec->n_ops; i-- > 0;)
                        walk_op(spec, i, lost, n_lost, rep);
        }
        host_sockets_free(v, (size_t)n);
}
