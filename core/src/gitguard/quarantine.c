#define _GNU_SOURCE
#include "gitguard/quarantine.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/tree.h"
#include "base/alloc.h"

/* Deep enough for any real tree; a deeper one is cut there in the copy. */
#define COPY_MAX_DEPTH 256

static int quarantine_open(struct quarantine *q)
{
        if (q->fd >= 0)
                return 0;
        if (q->out_fd < 0)
                return -ENOENT;
        if (mkdirat(q->out_fd, "quarantine", 0700) < 0 && errno != EEXIST)
                return -errno;
        q->fd = openat(q->out_fd, "quarantine", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return q->fd < 0 ? -errno : 0;
}

/* "0007-config": the counter, then `name` with anything but [A-Za-z0-9._-]
 * written as '_', at most 64 bytes of it. */
static void make_name(struct quarantine *q, const char *name, char *buf, size_t n)
{
        char safe[65];
        size_t k = 0;
        for (const char *c = name; *c && k < sizeof safe - 1; c++)
                safe[k++] = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                                            *c == '.' || *c == '-' || *c == '_'
                                    ? *c
                                    : '_';
        safe[k] = '\0';
        snprintf(buf, n, "%04u-%s", ++q->n, safe);
}

int quarantine_move(struct quarantine *q, int dirfd, const char *name, char **to)
{
        *to = NULL;
        int r = quarantine_open(q);
        if (r == 0) {
                char qname[96];
                for (int tries = 0; tries < 1000; tries++) {
                        make_name(q, name, qname, sizeof qname);
                        if (renameat2(dirfd, name, q->fd, qname, RENAME_NOREPLACE) == 0) {
                                *to = xasprintf("quarantine/%s", qname);
                                return 0;
                        }
                        if (errno != EEXIST)
                                break;
                }
                r = -errno;
                if (r == -EXDEV) {
                        /* Another filesystem: a copy for review, then the original goes. */
                        size_t skipped = 0;
                        if (tree_copy_at(dirfd, name, q->fd, qname, COPY_MAX_DEPTH, &skipped) == 0)
                                *to = xasprintf("quarantine/%s", qname);
                }
        }
        if (r == -ENOENT && faccessat(dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
                return 0; /* gone already */
        int rm = tree_remove_at(dirfd, name);
        if (rm < 0) {
                free(*to);
                *to = NULL;
                return rm;
        }
        return 0;
}

void quarantine_done(struct quarantine *q)
{
        if (q->fd >= 0)
                close(q->fd);
        q->fd = -1;
}
