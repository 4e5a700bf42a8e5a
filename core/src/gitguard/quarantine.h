/* The quarantine: OUTPUT_DIR/quarantine/, a folder the session never saw
 * (the session sees OUTPUT_DIR/home only), made after the session, where
 * whatever the guard takes out of a repository goes for review. Its entries
 * are named here ("0007-config": a counter, then the name made safe), so no
 * name in it can have been taken first. */
#ifndef TB_GITGUARD_QUARANTINE_H
#define TB_GITGUARD_QUARANTINE_H

struct quarantine {
        int out_fd;  /* OUTPUT_DIR, opened before the session; -1: none (moves become removals) */
        int fd;      /* OUTPUT_DIR/quarantine once made, else -1 */
        unsigned n;  /* names made so far */
};
#define QUARANTINE_INIT { .out_fd = -1, .fd = -1, .n = 0 }

/* Move `name` in `dirfd` (whatever it is, folders whole, never following a
 * link) into the quarantine: renamed when on the same filesystem, else
 * copied (at most 256 folders deep; FIFOs, sockets and devices left out)
 * and removed. *to (malloc'd) is its path from OUTPUT_DIR
 * ("quarantine/0007-config"), or NULL when it could only be removed. 0 once
 * it is gone from `dirfd`, or a negative errno while it is still there. */
int quarantine_move(struct quarantine *q, int dirfd, const char *name, char **to);

void quarantine_done(struct quarantine *q);

#endif
