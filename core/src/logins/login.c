#define _GNU_SOURCE
#include "logins/login.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/error.h"
#include "base/fileio.h"
#include "base/io.h"
#include "base/path.h"

#define LOGIN_MAX_SIZE (1 << 20)
#define LOGIN_MAX_WATCHED 64

struct login_sync {
        char *host_real;  /* the host file, links resolved */
        char *host_name;  /* its last component, as inotify reports it */
        int host_dirfd;   /* its folder, opened when the login was added */
        int host_wd;      /* inotify watch on that folder: other Trials' write-backs */
        char *copy_path;  /* the private copy, in the fresh home (for messages) */
        char *copy_rel;   /* the same, relative to the home */
        char *copy_name;  /* its last component, as inotify reports it */
        int home_fd;      /* the fresh home, opened before the session */
        int copy_dirfd;   /* the copy's folder, made and opened before the session */
        int wd;           /* inotify watch on the copy's folder */
        char *last;       /* what host file and copy held when they last agreed */
        size_t last_len;
};

/* Read `rel` beneath `dirfd` as a login: a regular file, through no link. */
static int read_login_at(int dirfd, const char *rel, char **out, size_t *len)
{
        return read_full_file_at(dirfd, rel, LOGIN_MAX_SIZE, READ_BENEATH | READ_REGULAR | READ_NONBLOCK | READ_SECURE,
                                 out, len, NULL);
}

/* Make the folders of `rel` (relative, at least one component) beneath
 * `dirfd`, 0700, through no link; the last one's fd, or a negative errno. */
static int mkdir_beneath(int dirfd, const char *rel)
{
        _cleanup_free_ char *copy = xstrdup(rel);
        _cleanup_close_ int cur = -1;
        char *save = NULL;
        for (char *part = strtok_r(copy, "/", &save); part; part = strtok_r(NULL, "/", &save)) {
                if (strcmp(part, "..") == 0 || strcmp(part, ".") == 0)
                        return -EXDEV;
                int at = cur >= 0 ? cur : dirfd;
                if (mkdirat(at, part, 0700) < 0 && errno != EEXIST)
                        return -errno;
                int fd = openat(at, part, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                if (fd < 0)
                        return -errno;
                tb_closep(&cur);
                cur = fd;
        }
        return cur < 0 ? -EINVAL : TAKE_FD(cur);
}

static void login_sync_close(struct login_sync *l)
{
        tb_closep(&l->host_dirfd);
        tb_closep(&l->home_fd);
        tb_closep(&l->copy_dirfd);
        free(l->host_real);
        free(l->host_name);
        free(l->copy_path);
        free(l->copy_rel);
        free(l->copy_name);
        erase_and_free(l->last);
}

/* Drop what `l` holds without closing or freeing it (it was moved). */
static void login_sync_forget(struct login_sync *l)
{
        *l = (struct login_sync){ .host_dirfd = -1, .home_fd = -1, .copy_dirfd = -1, .wd = -1, .host_wd = -1 };
}

int login_sync_add(struct login_set *set, const char *host_path, const char *home, const char *copy_path,
                   struct tb_error *err)
{
        size_t hl = strlen(home);
        if (strncmp(copy_path, home, hl) != 0 || copy_path[hl] != '/' || !strchr(copy_path + hl + 1, '/'))
                return tb_fail(err, -EINVAL, "the private copy '%s' must be in a folder of the home '%s'", copy_path, home);
        _cleanup_(login_sync_close) struct login_sync l = {
                .host_dirfd = -1, .home_fd = -1, .copy_dirfd = -1, .wd = -1, .host_wd = -1,
        };
        l.host_real = realpath(host_path, NULL);
        if (!l.host_real)
                return tb_fail(err, -errno, "login '%s': %s", host_path, strerror(errno));
        l.host_name = xstrdup(strrchr(l.host_real, '/') + 1);
        _cleanup_free_ char *host_dir = path_dirname(l.host_real);
        l.host_dirfd = open(host_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (l.host_dirfd < 0)
                return tb_fail(err, -errno, "login '%s': %s", host_dir, strerror(errno));
        int r = read_login_at(l.host_dirfd, l.host_name, &l.last, &l.last_len);
        if (r < 0)
                return tb_fail(err, r, "reading login '%s': %s", l.host_real, strerror(-r));

        /* The home and the copy's folder are opened now, before the session:
         * after it starts, they are reached only through these fds. */
        l.copy_path = xstrdup(copy_path);
        l.copy_rel = xstrdup(copy_path + hl + 1);
        l.copy_name = xstrdup(strrchr(copy_path, '/') + 1);
        l.home_fd = open(home, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (l.home_fd < 0)
                return tb_fail(err, -errno, "opening the home '%s': %s", home, strerror(errno));
        _cleanup_free_ char *dir_rel = path_dirname(l.copy_rel);
        l.copy_dirfd = mkdir_beneath(l.home_fd, dir_rel);
        r = l.copy_dirfd < 0 ? l.copy_dirfd : fchmod(l.copy_dirfd, 0700) < 0 ? -errno : 0;
        if (r < 0) {
                tb_closep(&l.copy_dirfd);
                return tb_fail(err, r, "making '%s/%s': %s", home, dir_rel, strerror(-r));
        }
        _cleanup_close_ int fd = openat(l.copy_dirfd, l.copy_name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        r = fd < 0 ? -errno : loop_write(fd, l.last, l.last_len);
        if (r == 0 && fchmod(fd, 0600) < 0)
                r = -errno;
        if (r < 0) {
                if (fd >= 0)
                        unlinkat(l.copy_dirfd, l.copy_name, 0);
                return tb_fail(err, r, "writing the private copy '%s': %s", copy_path, strerror(-r));
        }

        if (!set->watching) {
                set->inotify_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
                set->watching = set->inotify_fd >= 0;
                if (!set->watching) {
                        r = -errno;
                        unlinkat(l.copy_dirfd, l.copy_name, 0);
                        return tb_fail(err, r, "inotify: %s", strerror(-r));
                }
        }
        /* Watched by fd (the folder made above, whatever its path is later);
         * the host folder too, for the other Trials' write-backs. */
        char self[64];
        snprintf(self, sizeof self, "/proc/self/fd/%d", l.copy_dirfd);
        l.wd = inotify_add_watch(set->inotify_fd, self, IN_CLOSE_WRITE | IN_MOVED_TO | IN_ONLYDIR);
        if (l.wd < 0)
                l.wd = inotify_add_watch(set->inotify_fd, copy_path, IN_CLOSE_WRITE | IN_MOVED_TO | IN_ONLYDIR | IN_DONT_FOLLOW);
        snprintf(self, sizeof self, "/proc/self/fd/%d", l.host_dirfd);
        l.host_wd = inotify_add_watch(set->inotify_fd, self, IN_CLOSE_WRITE | IN_MOVED_TO | IN_ONLYDIR);
        if (l.host_wd < 0)
                l.host_wd = inotify_add_watch(set->inotify_fd, host_dir, IN_CLOSE_WRITE | IN_MOVED_TO | IN_ONLYDIR);
        if (l.wd < 0 || l.host_wd < 0) {
                r = -errno;
                unlinkat(l.copy_dirfd, l.copy_name, 0);
                return tb_fail(err, r, "watching '%s': %s", l.wd < 0 ? copy_path : host_dir, strerror(-r));
        }
        GREEDY_REALLOC(set->v, set->cap, set->n + 1);
        set->v[set->n++] = l;
        login_sync_forget(&l); /* now the set's */
        return 0;
}

static bool same_as_last(const struct login_sync *l, const char *data, size_t len)
{
        return len == l->last_len && (len == 0 || (data && l->last && memcmp(data, l->last, len) == 0));
}

static void remember(struct login_sync *l, char **data, size_t len)
{
        erase_and_free(l->last);
        l->last = TAKE_PTR(*data);
        l->last_len = len;
}

int login_sync_now(struct login_set *set, size_t i)
{
        struct login_sync *l = &set->v[i];
        size_t len = 0;
        _cleanup_erase_ char *data = NULL;
        /* Only the regular file at the login's place in the home: never a
         * link, a FIFO or a folder the session put there or on the way. */
        int r = read_login_at(l->home_fd, l->copy_rel, &data, &len);
        if (r == -ENOENT) /* gone, or a rename not finished yet: the next event tells */
                return 0;
        if (r < 0)
                return r == -EINVAL || r == -ELOOP || r == -ENOTDIR || r == -EXDEV || r == -EISDIR ? -EPERM : r;
        if (same_as_last(l, data, len))
                return 0;
        /* One write-back at a time per host folder, across every Trial
         * (flock on the folder itself: nothing is left beside the login).
         * Keep the host file's own mode; write beside it and rename over it
         * (the host file's real folder and name, its links resolved when
         * the login was added). */
        if (RETRY_EINTR(flock(l->host_dirfd, LOCK_EX)) < 0)
                return -errno;
        r = write_file_atomic_at(l->host_dirfd, l->host_name, data, len, 0600,
                                 WRITE_KEEP_MODE | WRITE_SYNC_FILE | WRITE_SYNC_DIR);
        flock(l->host_dirfd, LOCK_UN);
        if (r < 0)
                return r;
        remember(l, &data, len);
        set->writebacks++;
        return 0;
}

/* The host login changed (another Trial's write-back, or the host's own
 * Codex): put it into this Trial's private copy, atomically, unless the
 * session changed its copy too: then the session's, the newest, goes to
 * the host (and from there to every other Trial). 0 or negative errno. */
static int login_sync_pull(struct login_set *set, size_t i)
{
        struct login_sync *l = &set->v[i];
        size_t len = 0, copy_len = 0;
        _cleanup_erase_ char *data = NULL, *copy = NULL;
        int r = read_login_at(l->host_dirfd, l->host_name, &data, &len);
        if (r < 0 || same_as_last(l, data, len))
                return r == -ENOENT ? 0 : r;
        r = read_login_at(l->home_fd, l->copy_rel, &copy, &copy_len);
        if (r == 0 && !same_as_last(l, copy, copy_len))
                return login_sync_now(set, i);
        /* Into the folder at the login's place, if it still is a real one. */
        _cleanup_free_ char *dir_rel = path_dirname(l->copy_rel);
        _cleanup_close_ int dfd = open_beneath(l->home_fd, dir_rel, O_RDONLY | O_DIRECTORY);
        if (dfd < 0)
                return -EPERM;
        /* A new file (0600, owned like its folder, so that a session running
         * as another user than trialbox can read it) renamed over the old
         * one. A file of this Trial's fresh home: nothing to keep across a
         * crash, so no fsync. */
        r = write_file_atomic_at(dfd, l->copy_name, data, len, 0600, WRITE_DIR_OWNER);
        if (r < 0)
                return r;
        remember(l, &data, len);
        return 0;
}

/* Keep the first failure (the others are alike), naming its login. */
static int note_failure(int r, int first, const struct login_sync *l, struct tb_error *err)
{
        if (r >= 0 || first < 0)
                return first;
        if (r == -EPERM)
                return tb_fail(err, r, "the session's login '%s' is no longer a file in a real folder; not written back to '%s'",
                               l->copy_path, l->host_real);
        return tb_fail(err, r, "writing the login back to '%s' failed: %s", l->host_real, strerror(-r));
}

int login_sync_ready(struct login_set *set, struct tb_error *err)
{
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        bool changed[LOGIN_MAX_WATCHED] = { false }, host_changed[LOGIN_MAX_WATCHED] = { false };
        ssize_t n;

        while ((n = read(set->inotify_fd, buf, sizeof buf)) > 0) {
                for (char *e = buf; e < buf + n;) {
                        const struct inotify_event *ev = (const struct inotify_event *)e;
                        for (size_t i = 0; i < set->n && i < LOGIN_MAX_WATCHED && ev->len; i++) {
                                if (ev->wd == set->v[i].wd && strcmp(ev->name, set->v[i].copy_name) == 0)
                                        changed[i] = true;
                                if (ev->wd == set->v[i].host_wd && strcmp(ev->name, set->v[i].host_name) == 0)
                                        host_changed[i] = true;
                        }
                        e += sizeof *ev + ev->len;
                }
        }
        int first = 0;
        for (size_t i = 0; i < set->n && i < LOGIN_MAX_WATCHED; i++) {
                /* The session's write first: it is the newest. */
                first = note_failure(changed[i] ? login_sync_now(set, i) : 0, first, &set->v[i], err);
                first = note_failure(host_changed[i] ? login_sync_pull(set, i) : 0, first, &set->v[i], err);
        }
        return first;
}

int login_sync_finish(struct login_set *set, struct tb_error *err)
{
        int first = 0;
        for (size_t i = 0; i < set->n; i++)
                first = note_failure(login_sync_now(set, i), first, &set->v[i], err);
        return first;
}

void login_set_done(struct login_set *set)
{
        for (size_t i = 0; i < set->n; i++) {
                struct login_sync *l = &set->v[i];
                /* The copy in the folder made for it, wherever the session
                 * moved that folder; a link or folder there is not followed. */
                unlinkat(l->copy_dirfd, l->copy_name, 0);
                login_sync_close(l);
        }
        free(set->v);
        if (set->watching)
                close(set->inotify_fd);
        *set = (struct login_set){ 0 };
}
