#define _GNU_SOURCE
#include "login.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#define LOGIN_MAX_SIZE (1 << 20)

struct login_sync {
        char *host_real;  /* the host file, links resolved */
        char *copy_path;  /* the private copy, in the fresh home */
        char *copy_name;  /* its last component, as inotify reports it */
        int wd;           /* inotify watch on the copy's folder */
        char *last;       /* what the host file holds since we last wrote it */
        size_t last_len;
};

/* Read a login file, not following a link (nor waiting on a FIFO) planted
 * in its place. malloc'd (release with erase_and_free()), or NULL with errno set. */
static char *read_login(const char *path, size_t *len)
{
        char *buf = NULL;
        int r = read_file_secure(path, LOGIN_MAX_SIZE, &buf, len, NULL);
        if (r < 0) {
                errno = -r;
                return NULL;
        }
        return buf;
}

int login_sync_add(struct login_set *set, const char *host_path, const char *copy_path, struct tb_error *err)
{
        _cleanup_free_ char *host_real = realpath(host_path, NULL);
        if (!host_real)
                return tb_fail(err, -errno, "login '%s': %s", host_path, strerror(errno));
        size_t len;
        _cleanup_erase_ char *data = read_login(host_real, &len);
        if (!data)
                return tb_fail(err, -errno, "reading login '%s': %s", host_real, strerror(errno));

        _cleanup_free_ char *dir = path_dirname(copy_path);
        int r = mkdir_p(dir, 0700);
        if (r < 0)
                return tb_fail(err, r, "making '%s': %s", dir, strerror(-r));
        chmod(dir, 0700);
        _cleanup_close_ int fd = open(copy_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0 || write(fd, data, len) != (ssize_t)len || fchmod(fd, 0600) < 0) {
                r = -errno;
                unlink(copy_path);
                return tb_fail(err, r, "writing the private copy '%s': %s", copy_path, strerror(-r));
        }

        if (!set->watching) {
                set->inotify_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
                set->watching = set->inotify_fd >= 0;
                if (!set->watching) {
                        r = -errno;
                        unlink(copy_path);
                        return tb_fail(err, r, "inotify: %s", strerror(-r));
                }
        }
        int wd = inotify_add_watch(set->inotify_fd, dir, IN_CLOSE_WRITE | IN_MOVED_TO);
        if (wd < 0) {
                r = -errno;
                unlink(copy_path);
                return tb_fail(err, r, "watching '%s': %s", dir, strerror(-r));
        }
        GREEDY_REALLOC(set->v, set->cap, set->n + 1);
        const char *slash = strrchr(copy_path, '/');
        set->v[set->n++] = (struct login_sync){
                .host_real = steal_pointer(&host_real),
                .copy_path = xstrdup(copy_path),
                .copy_name = xstrdup(slash ? slash + 1 : copy_path),
                .wd = wd,
                .last = steal_pointer(&data),
                .last_len = len,
        };
        return 0;
}

int login_sync_now(struct login_set *set, size_t i)
{
        struct login_sync *l = &set->v[i];
        size_t len;
        _cleanup_erase_ char *data = read_login(l->copy_path, &len);
        if (!data) /* gone, or a rename not finished yet: the next event tells */
                return errno == ENOENT ? 0 : -errno;
        if (len == l->last_len && memcmp(data, l->last, len) == 0)
                return 0;
        /* Keep the host file's own mode; write beside it and rename over it. */
        struct stat st;
        mode_t mode = stat(l->host_real, &st) == 0 ? st.st_mode & 07777 : 0600;
        _cleanup_free_ char *dir = path_dirname(l->host_real);
        const char *name = strrchr(l->host_real, '/') + 1;
        _cleanup_close_ int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int r = dirfd < 0 ? -errno : write_file_atomic_at(dirfd, name, data, len, mode);
        if (r < 0)
                return r;
        erase_and_free(l->last);
        l->last = steal_pointer(&data);
        l->last_len = len;
        set->writebacks++;
        return 0;
}

/* Keep the first failure (the others are alike), naming its login. */
static int note_failure(int r, int first, const struct login_sync *l, struct tb_error *err)
{
        if (r >= 0 || first < 0)
                return first;
        return tb_fail(err, r, "writing the login back to '%s' failed: %s", l->host_real, strerror(-r));
}

int login_sync_ready(struct login_set *set, struct tb_error *err)
{
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        bool changed[64] = { false };
        ssize_t n;

        while ((n = read(set->inotify_fd, buf, sizeof buf)) > 0) {
                for (char *e = buf; e < buf + n;) {
                        const struct inotify_event *ev = (const struct inotify_event *)e;
                        for (size_t i = 0; i < set->n && i < TB_ARRAY_SIZE(changed); i++)
                                if (ev->wd == set->v[i].wd && ev->len && strcmp(ev->name, set->v[i].copy_name) == 0)
                                        changed[i] = true;
                        e += sizeof *ev + ev->len;
                }
        }
        int first = 0;
        for (size_t i = 0; i < set->n && i < TB_ARRAY_SIZE(changed); i++)
                first = note_failure(changed[i] ? login_sync_now(set, i) : 0, first, &set->v[i], err);
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
                unlink(l->copy_path);
                free(l->host_real);
                free(l->copy_path);
                free(l->copy_name);
                erase_and_free(l->last);
        }
        free(set->v);
        if (set->watching)
                close(set->inotify_fd);
        *set = (struct login_set){ 0 };
}
