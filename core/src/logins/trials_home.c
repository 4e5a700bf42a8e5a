#define _GNU_SOURCE
#include "logins/trials_home.h"

#include <dirent.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/tree.h"
#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/fileio.h"
#include "base/io.h"
#include "base/path.h"

int trials_home_lock(const char *path, long timeout_ms, int *fd_out, struct tb_error *err)
{
        long long deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
        for (;;) {
                _cleanup_close_ int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
                if (fd < 0)
                        return tb_fail(err, -errno, "lock '%s': %s", path, strerror(errno));
                if (RETRY_EINTR(flock(fd, LOCK_EX | LOCK_NB)) == 0) {
                        /* Locked; but is it still the file at `path`? */
                        struct stat a, b;
                        if (fstat(fd, &a) == 0 && lstat(path, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev) {
                                *fd_out = TAKE_FD(fd);
                                return 0;
                        }
                        continue;
                }
                if (errno != EWOULDBLOCK)
                        return tb_fail(err, -errno, "lock '%s': %s", path, strerror(errno));
                if (now_ms() >= deadline)
                        return tb_fail(err, -ETIMEDOUT, "lock '%s' is held by another Trial", path);
                struct timespec ts = { 0, 20L * 1000 * 1000 };
                nanosleep(&ts, NULL);
        }
}

static bool kept(const char *name, const char *const keep[])
{
        for (size_t i = 0; keep && keep[i]; i++)
                if (strcmp(name, keep[i]) == 0)
                        return true;
        return false;
}

struct wipe {
        const char *const *keep;
        const char *where;
        struct tb_error *err;
};

/* The home's own entries: each removed whole (base/tree.h: iteratively, so
 * a chain of folders a session made as deep as it liked costs no stack),
 * but the regular files `keep` names. Nothing below is walked here. */
static int wipe_top(struct tree_dir *d, void *ctx)
{
        struct wipe *w = ctx;
        for (size_t i = 0; i < d->n; i++) {
                struct tree_entry *e = &d->v[i];
                e->skip = true;
                if (e->type == DT_REG && kept(e->name, w->keep))
                        continue;
                int r = tree_remove_at(d->fd, e->name);
                if (r < 0)
                        return tb_fail(w->err, r, "wiping '%s/%s': %s", w->where, e->name, strerror(-r));
        }
        return 0;
}

int trials_home_wipe(const char *dir, const char *const keep[], struct tb_error *err)
{
        /* Through its parent, so that a home left unreadable is taken back too. */
        _cleanup_free_ char *up = path_dirname(dir);
        const char *base = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
        _cleanup_close_ int parent = open(up, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_close_ int dfd = parent < 0 ? -errno : !*base ? -EINVAL : tree_open_dir(parent, base, TREE_FIX_MODES);
        if (dfd < 0)
                return tb_fail(err, dfd, "wiping '%s': %s (it must be a real folder)", dir, strerror(-dfd));
        struct wipe w = { .keep = keep, .where = dir, .err = err };
        const struct tree_ops ops = { .pre = wipe_top, .flags = TREE_FIX_MODES };
        int r = tree_walk(dfd, &ops, &w);
        return r < 0 && !err->msg[0] ? tb_fail(err, r, "wiping '%s': %s", dir, strerror(-r)) : r;
}

/* ---- the kept login ---- */

const char *kept_login_invalid(const char *data, size_t len, enum kept_format format, size_t max)
{
        if (len == 0)
                return "empty";
        if (len > max)
                return "larger than a login";
        if (format == KEPT_ANY)
                return NULL;
        if (strlen(data) != len)
                return "not a JSON object (a NUL byte)";
        json_tokener *tok = json_tokener_new();
        if (!tok)
                return "not checked (out of memory)";
        json_object *j = json_tokener_parse_ex(tok, data, (int)len);
        size_t end = json_tokener_get_parse_end(tok);
        bool ok = j && json_tokener_get_error(tok) == json_tokener_success && json_object_is_type(j, json_type_object) &&
                  strspn(data + end, " \t\r\n") == len - end;
        json_object_put(j);
        json_tokener_free(tok);
        return ok ? NULL : "not a JSON object";
}

/* What is at `name` in `dfd`, when it is no regular file. */
static const char *not_a_file(int dfd, const char *name)
{
        struct stat st;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? "missing" : "unreadable";
        return S_ISDIR(st.st_mode)    ? "a folder"
               : S_ISLNK(st.st_mode)  ? "a symbolic link"
               : S_ISFIFO(st.st_mode) ? "a FIFO"
               : S_ISSOCK(st.st_mode) ? "a socket"
               : S_ISREG(st.st_mode)  ? "unreadable"
                                      : "not a regular file";
}

/* The login `name` in `dfd`, when it is a valid one: *data (erase_and_free
 * it) and *len; else NULL, *why saying what is there instead. Never
 * follows a link, never waits on a FIFO. */
static char *read_login(const struct kept_login *k, int dfd, size_t *len, const char **why)
{
        char *data = NULL;
        /* One byte over the limit: a login too large is read no further. */
        int r = read_full_file_at(dfd, k->name, k->max + 1, READ_NOFOLLOW | READ_REGULAR | READ_NONBLOCK | READ_SECURE,
                                  &data, len, NULL);
        if (r < 0) {
                *why = r == -EFBIG ? "larger than a login" : not_a_file(dfd, k->name);
                return NULL;
        }
        *why = kept_login_invalid(data, *len, k->format, k->max);
        if (*why) {
                erase_and_free(data);
                return NULL;
        }
        return data;
}

/* Put the kept copy `data` back in the login's place, owned like the
 * Trials home (the Harness, run as its owner, must read it). */
static int put_back(struct kept_login *k, const char *data, size_t len, struct tb_error *err)
{
        int r = tree_remove_at(k->dir_fd, k->name); /* whatever it is, folders whole, never a link followed */
        if (r < 0)
                return tb_fail(err, r, "removing '%s': %s", k->path, strerror(-r));
        r = write_file_atomic_at(k->dir_fd, k->name, data, len, 0600, WRITE_SYNC_FILE | WRITE_SYNC_DIR | WRITE_DIR_OWNER);
        return r < 0 ? tb_fail(err, r, "putting the login '%s' back: %s", k->path, strerror(-r)) : 0;
}

int kept_login_sync(struct kept_login *k, const char **restored, struct tb_error *err)
{
        size_t len = 0, kept_len = 0;
        const char *why = NULL, *kept_why = NULL;
        struct stat home;
        *restored = NULL;
        /* A session may have locked its folder (chmod 000): it is trialbox's to enter. */
        if (fstat(k->dir_fd, &home) < 0 ||
            ((home.st_mode & 0700) != 0700 && fchmod(k->dir_fd, (home.st_mode & 07777) | 0700) < 0))
                return tb_fail(err, -errno, "checking the login '%s': %s", k->path, strerror(errno));
        _cleanup_erase_ char *login = read_login(k, k->dir_fd, &len, &why);
        _cleanup_erase_ char *copy = read_login(k, k->keep_fd, &kept_len, &kept_why);
        if (login) {
                if (copy && kept_len == len && memcmp(copy, login, len) == 0)
                        return 0;
                int r = write_file_atomic_at(k->keep_fd, k->name, login, len, 0600, WRITE_SYNC_FILE | WRITE_SYNC_DIR);
                return r < 0 ? tb_fail(err, r, "keeping the login '%s' in '%s': %s", k->path, k->kept_path,
                                       strerror(-r))
                             : 0;
        }
        if (!copy) /* no good login anywhere: nothing to keep, nothing to put back */
                return 0;
        int r = put_back(k, copy, kept_len, err);
        if (r == 0)
                *restored = why;
        return r;
}

/* The keeping folder `name` in `parent`: made 0700 when missing, a real
 * folder of trialbox's user, 0700. An fd, or a negative errno with `err`. */
static int open_keep_dir(int parent, const char *name, const char *where, struct tb_error *err)
{
        if (mkdirat(parent, name, 0700) < 0 && errno != EEXIST)
                return tb_fail(err, -errno, "making '%s': %s", where, strerror(errno));
        int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0) {
                int e = errno;
                tb_closep(&fd);
                return tb_fail(err, -e, "opening '%s': %s (it must be a real folder)", where, strerror(e));
        }
        if (st.st_uid != geteuid()) {
                close(fd);
                return tb_fail(err, -EPERM, "'%s' belongs to uid %u, not trialbox's user; remove it", where,
                               (unsigned)st.st_uid);
        }
        if ((st.st_mode & 07777) != 0700 && fchmod(fd, 0700) < 0) {
                int e = errno;
                close(fd);
                return tb_fail(err, -e, "'%s': %s", where, strerror(e));
        }
        return fd;
}

int kept_login_open(struct kept_login *k, const char *path, enum kept_format format, size_t max,
                    const char **restored, struct tb_error *err)
{
        *restored = NULL;
        if (!path || path[0] != '/')
                return tb_fail(err, -EINVAL, "cannot keep the login '%s': not an absolute path", path ? path : "");
        _cleanup_free_ char *home = path_dirname(path);
        const char *name = strrchr(path, '/') + 1, *base = strrchr(home, '/') + 1;
        if (!*name || !*base || strcmp(name, "..") == 0 || strcmp(base, "..") == 0 || strcmp(name, ".") == 0 ||
            strcmp(base, ".") == 0)
                return tb_fail(err, -EINVAL, "cannot keep the login '%s': not a file in a folder", path);
        _cleanup_free_ char *up = path_dirname(home);
        _cleanup_close_ int parent = open(up, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (parent < 0)
                return tb_fail(err, -errno, "keeping the login '%s': '%s': %s", path, up, strerror(errno));
        *k = (struct kept_login){
                .dir_fd = -1, .keep_fd = -1, .name = xstrdup(name), .path = xstrdup(path),
                .kept_path = xasprintf("%s.kept/%s", home, name), .format = format, .max = max ? max : KEPT_LOGIN_MAX,
        };
        k->dir_fd = openat(parent, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (k->dir_fd < 0)
                return tb_fail(err, -errno, "keeping the login '%s': '%s': %s (it must be a real folder)", path, home,
                               strerror(errno));
        _cleanup_free_ char *keep_name = xasprintf("%s.kept", base);
        _cleanup_free_ char *keep_dir = xasprintf("%s.kept", home);
        k->keep_fd = open_keep_dir(parent, keep_name, keep_dir, err);
        if (k->keep_fd < 0)
                return k->keep_fd;
        return kept_login_sync(k, restored, err);
}

void kept_login_done(struct kept_login *k)
{
        tb_closep(&k->dir_fd);
        tb_closep(&k->keep_fd);
        free(k->name);
        free(k->path);
        free(k->kept_path);
        *k = KEPT_LOGIN_INIT;
}
