#define _GNU_SOURCE
#include "sandbox/session_user.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/error.h"
#include "base/io.h"
#include "base/spawn.h"

static int lookup(const char *want, struct session_user *out, struct tb_error *err)
{
        struct passwd *pw = getpwnam(want);
        char *end = NULL;
        errno = 0;
        unsigned long n = pw ? 0 : strtoul(want, &end, 10);
        if (!pw && want[0] >= '0' && want[0] <= '9' && end && !*end && errno == 0 && n < (uid_t)-1) {
                pw = getpwuid((uid_t)n);
                if (!pw) { /* a bare number: its own group */
                        out->uid = (uid_t)n;
                        out->gid = (gid_t)n;
                        out->name = xstrdup(want);
                        return 0;
                }
        }
        if (!pw)
                return tb_fail(err, -ESRCH, "--user '%s' is no user here; pass a user name or a number", want);
        out->uid = pw->pw_uid;
        out->gid = pw->pw_gid;
        out->name = xstrdup(pw->pw_name);
        return 0;
}

static char *name_of(uid_t uid)
{
        struct passwd *pw = getpwuid(uid);
        return pw ? xstrdup(pw->pw_name) : xasprintf("%u", (unsigned)uid);
}

int session_user_resolve(const char *want, bool root_session, uid_t euid, const struct stat *repo,
                         struct session_user *out, struct tb_error *err)
{
        *out = (struct session_user){ .uid = euid, .gid = getegid() };
        if (euid != 0) {
                /* --root-session is a no-op here: the session is not root anyway. */
                if (want) {
                        struct session_user u = { 0 };
                        int r = lookup(want, &u, err);
                        bool same = r == 0 && u.uid == euid;
                        session_user_done(&u);
                        if (r < 0)
                                return r;
                        if (!same)
                                return tb_fail(err, -EPERM,
                                               "--user '%s': only root can run a session as another user; run "
                                               "trialbox as '%s', or as root",
                                               want, want);
                }
                out->name = name_of(euid);
                out->why = "trialbox's own";
                return 0;
        }
        if (want && root_session)
                return tb_fail(err, -EINVAL, "--user and --root-session exclude each other; pass one");
        if (root_session) {
                out->name = xstrdup("root");
                out->why = "--root-session";
                return 0;
        }
        if (want) {
                int r = lookup(want, out, err);
                if (r < 0)
                        return r;
                if (out->uid == 0) {
                        session_user_done(out);
                        return tb_fail(err, -EPERM,
                                       "--user '%s' is root; pass --root-session to accept a root session", want);
                }
                out->drop = true;
                out->why = "--user";
                return 0;
        }
        if (repo && repo->st_uid != 0) {
                struct passwd *pw = getpwuid(repo->st_uid);
                out->uid = repo->st_uid;
                out->gid = pw ? pw->pw_gid : repo->st_gid;
                out->name = name_of(repo->st_uid);
                out->drop = true;
                out->why = "the repository's owner";
                return 0;
        }
        return tb_fail(err, -EPERM,
                       "started as root with a root-owned repository, the session would run as root: pass --user "
                       "NAME after making the repository writable by that user (chown -R NAME REPO), or "
                       "--root-session to accept a root session on a throwaway machine");
}

void session_user_done(struct session_user *u)
{
        free(u->name);
        u->name = NULL;
}

/* The system calls themselves, not glibc's set*id() wrappers: in a process
 * glibc thinks has several threads (a fork of trialbox, which has some),
 * the wrappers run its "setxid" broadcast, which walks the process's thread
 * list from the calling thread's descriptor and signals every other thread
 * to switch too. In bwrap's process, a CLONE_VM child that runs on the
 * keeper's memory and TLS (keeper.c), that would walk the keeper's list as
 * if it were the keeper and take the keeper's locks. The system call
 * changes the calling task alone, which is all a caller here wants (a child
 * of its own, with one thread); glibc's posix_spawn makes its own id
 * changes the same way. The 32-bit ids' calls where an ABI has both. */
#ifdef SYS_setresuid32
#define SYS_SETGROUPS SYS_setgroups32
#define SYS_SETRESGID SYS_setresgid32
#define SYS_SETRESUID SYS_setresuid32
#else
#define SYS_SETGROUPS SYS_setgroups
#define SYS_SETRESGID SYS_setresgid
#define SYS_SETRESUID SYS_setresuid
#endif

int session_user_switch(const struct session_user *u)
{
        if (syscall(SYS_SETGROUPS, 0, NULL) < 0 || syscall(SYS_SETRESGID, u->gid, u->gid, u->gid) < 0 ||
            syscall(SYS_SETRESUID, u->uid, u->uid, u->uid) < 0)
                return -errno;
        uid_t r, e, s;
        gid_t gr, ge, gs;
        if (getresuid(&r, &e, &s) < 0 || getresgid(&gr, &ge, &gs) < 0)
                return -errno;
        if (r != u->uid || e != u->uid || s != u->uid || gr != u->gid || ge != u->gid || gs != u->gid)
                return -EPERM;
        /* No way back to root. */
        if (u->uid != 0 && syscall(SYS_SETRESUID, 0, 0, 0) == 0)
                return -EPERM;
        return 0;
}

bool session_user_can(const struct session_user *u, const char *path, int mode)
{
        /* The answer comes back over a pipe, not as the child's exit status
         * (which a tool such as valgrind may replace with its own). */
        bool ok = false;
        session_user_can_all(u, (char *const[]){ (char *)path }, 1, mode, &ok);
        return ok;
}

/* The checks in this process, as the kernel makes them for the session:
 * with the filesystem ids (setfsuid, setfsgid: per thread, and the
 * filesystem capabilities go with a non-zero fsuid) and no supplementary
 * groups, by faccessat2(AT_EACCESS), which checks with those ids. No fork:
 * a child per check cost a Trial as another user about 1.5 ms each. true
 * when made (ok[] filled); false, nothing changed, for the caller to ask a
 * child (no faccessat2 before Linux 5.8, or a seccomp profile refusing it).
 * Everything is put back before it returns; if that failed, trialbox would
 * go on as the wrong user: abort. */
static bool can_all_here(const struct session_user *u, char *const paths[], size_t n, int mode, bool *ok)
{
        if (geteuid() != 0)
                return false;
        int ng = getgroups(0, NULL);
        if (ng < 0)
                return false;
        _cleanup_free_ gid_t *groups = xcalloc((size_t)ng + 1, sizeof *groups);
        if (getgroups(ng, groups) != ng || setgroups(0, NULL) < 0)
                return false;
        uid_t fsuid = (uid_t)setfsuid((uid_t)-1);
        gid_t fsgid = (gid_t)setfsgid((gid_t)-1);
        setfsgid(u->gid);
        setfsuid(u->uid);
        bool made = (uid_t)setfsuid((uid_t)-1) == u->uid && (gid_t)setfsgid((gid_t)-1) == u->gid;
        for (size_t i = 0; made && i < n; i++) {
                long r = syscall(SYS_faccessat2, AT_FDCWD, paths[i], mode, AT_EACCESS);
                /* ENOSYS: no faccessat2; EPERM: a container's seccomp profile
                 * that refuses it. Either way the child answers. */
                made = !(r < 0 && (errno == ENOSYS || errno == EPERM));
                ok[i] = r == 0;
        }
        setfsuid(fsuid);
        setfsgid(fsgid);
        if ((uid_t)setfsuid((uid_t)-1) != fsuid || (gid_t)setfsgid((gid_t)-1) != fsgid || setgroups((size_t)ng, groups) < 0)
                abort();
        return made;
}

struct can_all {
        const struct session_user *u;
        char *const *paths;
        size_t n;
        int mode;
};

/* In the child: as the user, 1 or 0 for each path on stdout. */
static int can_all_child(void *ctx)
{
        const struct can_all *c = ctx;
        bool sw = session_user_switch(c->u) == 0;
        for (size_t i = 0; i < c->n; i++) {
                char b = sw && access(c->paths[i], c->mode) == 0 ? 1 : 0;
                if (loop_write(STDOUT_FILENO, &b, 1) < 0)
                        return 1;
        }
        return 0;
}

void session_user_can_all(const struct session_user *u, char *const paths[], size_t n, int mode, bool *ok)
{
        for (size_t i = 0; i < n; i++)
                ok[i] = false;
        if (!u->drop) {
                for (size_t i = 0; i < n; i++)
                        ok[i] = access(paths[i], mode) == 0;
                return;
        }
        if (n == 0 || can_all_here(u, paths, n, mode, ok))
                return;
        for (size_t i = 0; i < n; i++)
                ok[i] = false;
        /* A child switches to the user and answers one byte per path. */
        struct can_all c = { u, paths, n, mode };
        struct spawn s = { .child_fn = can_all_child, .ctx = &c, .std_out = SPAWN_CAPTURE, .capture_max = n };
        if (spawn_run(&s, NULL) == 0)
                for (size_t i = 0; i < s.out.len; i++)
                        ok[i] = s.out.buf[i] == 1;
        spawn_done(&s);
}

static int chown_tree_at(int dirfd, uid_t uid, gid_t gid, int depth)
{
        if (fchown(dirfd, uid, gid) < 0)
                return -errno;
        if (depth > 64)
                return -ELOOP;
        int fd = dup(dirfd);
        if (fd < 0)
                return -errno;
        fcntl(fd, F_SETFD, FD_CLOEXEC);
        DIR *d = fdopendir(fd);
        if (!d) {
                close(fd);
                return -errno;
        }
        rewinddir(d);
        int r = 0;
        struct dirent *e;
        while (r == 0 && (e = readdir(d))) {
                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                        continue;
                int sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub >= 0) {
                        r = chown_tree_at(sub, uid, gid, depth + 1);
                        close(sub);
                } else if (fchownat(dirfd, e->d_name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0) {
                        r = -errno;
                }
        }
        closedir(d);
        return r;
}

int session_user_chown_tree(int dirfd, const struct session_user *u)
{
        return chown_tree_at(dirfd, u->uid, u->gid, 0);
}
