/* Reading what a session may have planted, and noting what the guard did
 * (gitguard/guard_internal.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gitguard/guard_internal.h"
#include "gitguard/repo_guard.h"

/* ---- reading ---- */

/* The regular file `name` in `dirfd`, never following a link or blocking on
 * a FIFO, up to `max` bytes: malloc'd (NUL-terminated), or NULL with errno
 * (EFBIG when larger, EINVAL when not a regular file). */
char *guard_read_at(int dirfd, const char *name, size_t max, size_t *len_out, mode_t *mode_out)
{
        struct stat st;
        char *buf = read_file_at(dirfd, name, max, len_out, &st);
        if (buf && mode_out)
                *mode_out = st.st_mode & 07777;
        return buf;
}

/* The first line of a small file, trimmed. */
char *guard_read_line_at(int dirfd, const char *name)
{
        char *s = guard_read_at(dirfd, name, 4096, NULL, NULL);
        if (s)
                s[strcspn(s, "\r\n")] = '\0';
        return s;
}

bool guard_is_dir_at(int dirfd, const char *name)
{
        struct stat st;
        return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

bool guard_is_reg_at(int dirfd, const char *name)
{
        struct stat st;
        return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

bool guard_exists_at(int dirfd, const char *name)
{
        struct stat st;
        return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

int guard_open_dir_at(int dirfd, const char *name)
{
        return openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
}

/* The names in the folder open at `fd` (not "." and ".."), in `out`. */
int guard_list_names(int fd, struct strv *out)
{
        int dup_fd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = dup_fd < 0 ? NULL : fdopendir(dup_fd);
        if (!d) {
                if (dup_fd >= 0)
                        close(dup_fd);
                return -errno;
        }
        for (struct dirent *e; (errno = 0, e = readdir(d));)
                if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                        strv_add(out, e->d_name);
        int r = errno ? -errno : 0;
        closedir(d);
        return r;
}

/* `s` shown in a record: at most SHOWN_MAX bytes, its tail kept. */
char *guard_shown(const char *s)
{
        size_t n = strlen(s);
        return n <= SHOWN_MAX ? xstrdup(s) : xasprintf(".../%s", s + n - SHOWN_MAX);
}

/* ---- the record ---- */

const char *repo_guard_status_name(enum guard_status s)
{
        switch (s) {
        case GUARD_RESTORED:
                return "restored";
        case GUARD_QUARANTINED:
                return "quarantined";
        case GUARD_FAILED:
                return "failed";
        default:
                return "none";
        }
}

void guard_note_move(struct repo_guard *g, const char *path, char *to, const char *why)
{
        if (g->total_moved++ >= GUARD_KEEP_MAX) {
                free(to);
                return;
        }
        GREEDY_REALLOC(g->moved, g->cap_moved, g->n_moved + 1);
        g->moved[g->n_moved++] = (struct guard_move){ .path = guard_shown(path), .to = to, .why = why };
}

/* A step that could not be done: the first one's words are the detail. */
int guard_note_failure(struct repo_guard *g, int r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int guard_note_failure(struct repo_guard *g, int r, const char *fmt, ...)
{
        if (!g->detail[0]) {
                char what[400];
                va_list ap;
                va_start(ap, fmt);
                vsnprintf(what, sizeof what, fmt, ap);
                va_end(ap);
                snprintf(g->detail, sizeof g->detail, "%s: %s", what, strerror(r < 0 ? -r : EIO));
        }
        return r < 0 ? r : -EIO;
}

/* Move `name` in `dirfd` (shown as `path`) to the quarantine, noting it. */
int guard_move_out(struct repo_guard *g, int dirfd, const char *name, const char *path, const char *why)
{
        char *to = NULL;
        int r = quarantine_move(&g->q, dirfd, name, &to);
        if (r < 0)
                return guard_note_failure(g, r, "cannot move '%s' out of the repository", path);
        guard_note_move(g, path, to, why);
        return 0;
}

void guard_note_change(struct repo_guard *g, const char *path, const char *change, bool kept, bool host,
                        char *saved)
{
        if (g->total_changes++ >= GUARD_KEEP_MAX) {
                free(saved);
                return;
        }
        GREEDY_REALLOC(g->changes, g->cap_changes, g->n_changes + 1);
        g->changes[g->n_changes++] = (struct guard_change){
                .path = guard_shown(path), .change = change, .kept = kept, .host_config = host, .saved = saved
        };
}

void guard_note_restored(struct repo_guard *g, const char *path)
{
        if (g->total_restored++ < GUARD_KEEP_MAX)
                strv_add_take(&g->restored, guard_shown(path));
}

void guard_note_setuid(struct repo_guard *g, const char *path)
{
        if (g->total_setuid++ < GUARD_KEEP_MAX)
                strv_add_take(&g->setuid_cleared, guard_shown(path));
}
