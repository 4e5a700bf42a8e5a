#define _GNU_SOURCE
#include "sandbox/cow.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/macro.h"
#include "base/spawn.h"

static const char *const layer_names[] = {
        [COW_AUTO] = "auto",
        [COW_BWRAP_OVERLAY] = "bwrap-overlay",
        [COW_OVERLAYFS] = "overlayfs",
        [COW_COPY] = "copy",
};

const char *cow_layer_name(enum cow_layer l) { return (size_t)l < TB_ARRAY_SIZE(layer_names) ? layer_names[l] : "?"; }

int cow_layer_parse(const char *s, enum cow_layer *out)
{
        for (size_t i = 0; s && i < TB_ARRAY_SIZE(layer_names); i++)
                if (strcmp(s, layer_names[i]) == 0) {
                        *out = (enum cow_layer)i;
                        return 0;
                }
        return -EINVAL;
}

bool cow_bwrap_help_has_overlay(const char *help_text)
{
        return help_text && strstr(help_text, "--overlay-src") && strstr(help_text, "--tmp-overlay");
}

bool cow_bwrap_has_overlay(const char *path)
{
        struct stat st;
        if (!path || stat(path, &st) < 0 || (st.st_mode & S_ISUID))
                return false;
        char *argv[] = { (char *)path, "--help", NULL };
        struct spawn s = { .argv = argv,
                           .std_in = SPAWN_DEV_NULL,
                           .std_out = SPAWN_CAPTURE,
                           .std_err = SPAWN_TO_STDOUT,
                           .capture_max = 65536 };
        bool has = spawn_run(&s, NULL) == 0 && cow_bwrap_help_has_overlay(s.out.buf);
        spawn_done(&s);
        return has;
}

/* ---- the overlay, in the calling process ---- */

enum step {
        STEP_OPEN,
        STEP_UNSHARE,
        STEP_MAP,
        STEP_PRIVATE,
        STEP_TMPFS,
        STEP_UPPER,
        STEP_OVERLAY,
        STEP_N,
};

static const char *const step_names[STEP_N] = {
        [STEP_OPEN] = "open the folder",
        [STEP_UNSHARE] = "unshare a mount namespace",
        [STEP_MAP] = "map the user's own ids in a user namespace",
        [STEP_PRIVATE] = "make the mounts private",
        [STEP_TMPFS] = "mount(tmpfs)",
        [STEP_UPPER] = "make the upper and work folders",
        [STEP_OVERLAY] = "mount(overlay)",
};

/* Write `text` to a /proc file, without allocating. 0 or -errno. */
static int write_proc(const char *path, const char *text)
{
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        size_t n = strlen(text);
        ssize_t w = write(fd, text, n);
        int e = errno;
        close(fd);
        return w == (ssize_t)n ? 0 : -(w < 0 ? e : EIO);
}

/* A user namespace in which the caller's uid and gid are themselves. */
static int map_own_ids(uid_t uid, gid_t gid)
{
        char line[64];
        int r = write_proc("/proc/self/setgroups", "deny");
        snprintf(line, sizeof line, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
        if (r == 0)
                r = write_proc("/proc/self/uid_map", line);
        snprintf(line, sizeof line, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
        if (r == 0)
                r = write_proc("/proc/self/gid_map", line);
        return r;
}

/* In the tmpfs at `tfd`: upper/ (the merged folder's root: owner, mode and
 * times of the folder below, or the sandbox sees a folder of root's, 0755)
 * and work/. */
static int make_upper(int tfd, const struct stat *below)
{
        if (mkdirat(tfd, "upper", 0700) < 0 || mkdirat(tfd, "work", 0700) < 0)
                return -errno;
        /* Not root, the ids are ours already (an identity map). */
        if (fchownat(tfd, "upper", below->st_uid, below->st_gid, 0) < 0 && geteuid() == 0)
                return -errno;
        if (fchmodat(tfd, "upper", below->st_mode & 07777, 0) < 0)
                return -errno;
        const struct timespec ts[2] = { below->st_atim, below->st_mtim };
        if (utimensat(tfd, "upper", ts, 0) < 0) {
        }
        return 0;
}

/* The steps, each failing with its own name; `lower` and `tfd` are the
 * caller's to close. */
static int overlay_steps(const struct sandbox_cow *cow, int *lower, int *tfd, enum step *step)
{
        const bool root = geteuid() == 0;
        const uid_t uid = getuid();
        const gid_t gid = getgid();
        struct stat below;
        char opts[256];
        *step = STEP_UNSHARE;
        if (unshare(root ? CLONE_NEWNS : CLONE_NEWUSER | CLONE_NEWNS) < 0)
                return -errno;
        *step = STEP_MAP;
        int r = root ? 0 : map_own_ids(uid, gid);
        if (r < 0)
                return r;
        /* Nothing mounted here may reach the host's namespace. */
        *step = STEP_PRIVATE;
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return -errno;
        /* Held by fd, opened in the new namespace (overlayfs takes a lower
         * layer of its own namespace only): the tmpfs and the overlay are
         * about to cover it. */
        *step = STEP_OPEN;
        *lower = open(cow->path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (*lower < 0 || fstat(*lower, &below) < 0)
                return -errno;
        *step = STEP_TMPFS;
        /* size= bounds the data; nr_inodes= the files, whose memory size=
         * does not count: one per KiB of the size, at least 16384. */
        if (cow->size > 0)
                snprintf(opts, sizeof opts, "mode=0700,size=%lld,nr_inodes=%lld", cow->size,
                         cow->size / 1024 > 16384 ? cow->size / 1024 : 16384);
        else
                snprintf(opts, sizeof opts, "mode=0700");
        if (mount("trialbox-layer", cow->path, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
                return -errno;
        *step = STEP_UPPER;
        *tfd = open(cow->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (*tfd < 0)
                return -errno;
        if ((r = make_upper(*tfd, &below)) < 0)
                return r;
        /* Every path through an fd: no path of the host's in the options,
         * so none of ',' ':' '\' to escape. */
        *step = STEP_OVERLAY;
        snprintf(opts, sizeof opts,
                 "lowerdir=/proc/self/fd/%d,upperdir=/proc/self/fd/%d/upper,"
                 "workdir=/proc/self/fd/%d/work%s",
                 *lower, *tfd, *tfd, root ? "" : ",userxattr");
        if (mount("trialbox-overlay", cow->path, "overlay", MS_NOSUID | MS_NODEV, opts) < 0)
                return -errno;
        return chdir("/") < 0 ? -errno : 0;
}

static int overlay_enter(const struct sandbox_cow *cow, enum step *step)
{
        int lower = -1, tfd = -1;
        int r = overlay_steps(cow, &lower, &tfd, step);
        if (lower >= 0)
                close(lower);
        if (tfd >= 0)
                close(tfd);
        return r;
}

int cow_overlay_enter(const struct sandbox_cow *cow, const char **step)
{
        enum step s = STEP_OPEN;
        int r = cow->path ? overlay_enter(cow, &s) : -EINVAL;
        if (step)
                *step = step_names[s];
        return r;
}

/* The probe's child: the overlay tried, "ERRNO STEP" on its stdout. */
static int probe_child(void *ctx)
{
        enum step s = STEP_OPEN;
        int r = overlay_enter(ctx, &s);
        printf("%d %d\n", -r, (int)s);
        fflush(stdout);
        return 0;
}

int cow_overlay_probe(const struct sandbox_cow *cow, struct tb_error *err)
{
        struct spawn sp = { .child_fn = probe_child,
                            .ctx = (void *)cow,
                            .std_in = SPAWN_DEV_NULL,
                            .std_out = SPAWN_CAPTURE,
                            .std_err = SPAWN_DEV_NULL,
                            .capture_max = 64 };
        int e = EIO, s = STEP_OPEN;
        int r = spawn_run(&sp, err);
        if (r == 0 && (sscanf(sp.out.buf, "%d %d", &e, &s) != 2 || s < 0 || s >= STEP_N)) {
                e = EIO;
                s = STEP_OPEN;
        }
        spawn_done(&sp);
        if (r < 0)
                return r;
        if (e == 0)
                return 0;
        return tb_fail(err, -e, "an overlay on '%s' cannot be mounted here: %s: %s", cow->path, step_names[s],
                       strerror(e));
}
