#define _GNU_SOURCE
#include "limits/cgroup.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/error.h"
#include "base/fileio.h"
#include "base/io.h"
#include "base/str.h"
#include "base/strbuf.h"

static const char *const controller_names[CG_N] = { "memory", "pids", "cpu", "cpuacct" };
static const char *const controller_options[CG_N] = { "--memory", "--pids", "--cpus", NULL };

#define FIX "run trialbox under `systemd-run --user --scope -p Delegate=yes`, or as root"
#define CPU_PERIOD_US 100000LL

struct cg_dir {
        char *path;
        int dirfd;    /* O_RDONLY|O_DIRECTORY: files are opened relative to it */
        int join_fd;  /* O_WRONLY, for joining after fork: v1's tasks, v2's cgroup.procs */
};

struct cgroup {
        enum cgroup_mechanism mechanism;
        struct cg_dir dir[CG_N]; /* v2: dir[0] only */
        size_t n;
        int by_controller[CG_N]; /* index into dir, or -1 (v2: 0 where enabled) */
        int oom_fd;              /* inotify (v2) or eventfd (v1), or -1 */
        int oom_control_fd;      /* v1: memory.oom_control, registered with the eventfd */
        long long sampled_peak;
};

const char *cgroup_mechanism_name(enum cgroup_mechanism m)
{
        switch (m) {
        case CGROUP_V2:
                return "cgroup v2 (delegated)";
        case CGROUP_V1:
                return "cgroup v1";
        case CGROUP_NONE:
                break;
        }
        return "none";
}

/* ---- small file helpers, relative to a cgroup folder ---- */

/* A cgroup file (cgroupfs reports a size of 0: read to the end, 16 MiB at most). */
static char *read_at(int dirfd, const char *file) { return read_file_at(dirfd, file, 16u << 20, NULL, NULL); }

static int write_at(int dirfd, const char *file, const char *value)
{
        _cleanup_close_ int fd = openat(dirfd, file, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        size_t len = strlen(value);
        ssize_t w = write(fd, value, len);
        if (w < 0)
                return -errno;
        return (size_t)w == len ? 0 : -EIO;
}

/* The number after "KEY " on a line of a flat keyed file, or -1. */
static long long keyed_value(const char *text, const char *key)
{
        size_t klen = strlen(key);
        for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
                if (strncmp(line, key, klen) == 0 && line[klen] == ' ')
                        return strtoll(line + klen + 1, NULL, 10);
        }
        return -1;
}

static long long keyed_at(int dirfd, const char *file, const char *key)
{
        _cleanup_free_ char *text = read_at(dirfd, file);
        return text ? keyed_value(text, key) : -1;
}

static long long number_at(int dirfd, const char *file)
{
        _cleanup_free_ char *text = read_at(dirfd, file);
        if (!text)
                return -1;
        char *end;
        long long v = strtoll(text, &end, 10);
        return end == text ? -1 : v;
}

/* Is `tok` one of the `sep`-separated words of `list`? */
static bool has_word(const char *list, const char *tok, char sep)
{
        size_t n = strlen(tok);
        for (const char *p = list; p; p = strchr(p, sep), p = p ? p + 1 : NULL) {
                if (strncmp(p, tok, n) == 0 && (p[n] == sep || p[n] == '\0' || p[n] == '\n' || p[n] == ' '))
                        return true;
        }
        return false;
}

static void sleep_ms(long ms)
{
        struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
        (void)RETRY_EINTR(nanosleep(&ts, &ts)); /* the rest of it, when interrupted */
}

/* ---- the probe ---- */

/* snprintf for messages that may be cut short (paths are long). */
static void say(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *buf, size_t n, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, n, fmt, ap);
        va_end(ap);
}

/* Our cgroup path in the hierarchy whose /proc/self/cgroup line has
 * `controllers` matching: v2 is "0::PATH"; v1 lists the controller. */
static bool own_cgroup_path(const char *proc_cgroup, const char *controller, char *out, size_t n)
{
        _cleanup_free_ char *copy = xstrdup(proc_cgroup);
        char *save = NULL;
        for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char *ctls = strchr(line, ':');
                char *path = ctls ? strchr(ctls + 1, ':') : NULL;
                if (!path)
                        continue;
                *path++ = '\0';
                *ctls++ = '\0';
                bool match = controller ? has_word(ctls, controller, ',') : (strcmp(line, "0") == 0 && *ctls == '\0');
                if (match) {
                        snprintf(out, n, "%s", path);
                        return true;
                }
        }
        return false;
}

/* Where the hierarchy is mounted, joined with our path in it: mountinfo's
 * fields are "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS... - FSTYPE SRC SUPEROPTS". */
static bool hierarchy_dir(const char *mountinfo, const char *controller, const char *own, char *out, size_t n)
{
        _cleanup_free_ char *copy = xstrdup(mountinfo);
        char *save = NULL;
        for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char root[1024], point[1024], fstype[64], superopts[1024];
                const char *dash = strstr(line, " - ");
                if (!dash || sscanf(dash + 3, "%63s %*s %1023s", fstype, superopts) != 2)
                        continue;
                bool match = controller ? strcmp(fstype, "cgroup") == 0 && has_word(superopts, controller, ',')
                                        : strcmp(fstype, "cgroup2") == 0;
                if (!match || sscanf(line, "%*s %*s %*s %1023s %1023s", root, point) != 2)
                        continue;
                /* A mount of a subtree (a container's) shows the part under its root. */
                const char *rel = own;
                if (strcmp(root, "/") != 0) {
                        if (!str_has_prefix(own, root))
                                continue;
                        rel = own + strlen(root);
                }
                snprintf(out, n, "%s%s", point, strcmp(rel, "/") == 0 ? "" : rel);
                return true;
        }
        return false;
}

static bool writable_dir(const char *dir, const char *const files[])
{
        if (access(dir, W_OK) < 0)
                return false;
        for (size_t i = 0; files[i]; i++) {
                char path[PATH_MAX + 64];
                snprintf(path, sizeof path, "%s/%s", dir, files[i]);
                if (access(path, W_OK) < 0)
                        return false;
        }
        return true;
}

static void wanted_controllers(const struct trial_limits *l, bool need[CG_N])
{
        need[CG_MEMORY] = !l || l->memory_bytes != LIMIT_UNSET;
        need[CG_PIDS] = !l || l->pids != LIMIT_UNSET;
        need[CG_CPU] = !l || l->cpus_milli != LIMIT_UNSET;
        need[CG_CPUACCT] = false;
}

/* v2: our own cgroup, writable, offering every needed controller. */
static bool probe_v2(const char *proc_cgroup, const char *mountinfo, const bool need[CG_N], struct cgroup_probe *p,
                     char *why, size_t n)
{
        static const char *const files[] = { "cgroup.procs", "cgroup.subtree_control", NULL };
        char own[PATH_MAX], dir[PATH_MAX];
        if (!own_cgroup_path(proc_cgroup, NULL, own, sizeof own) || !hierarchy_dir(mountinfo, NULL, own, dir, sizeof dir)) {
                say(why, n, "there is no cgroup v2 hierarchy");
                return false;
        }
        int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_free_ char *offered = dirfd >= 0 ? read_at(dirfd, "cgroup.controllers") : NULL;
        if (dirfd >= 0)
                close(dirfd);
        for (int c = CG_MEMORY; c <= CG_CPU; c++) {
                p->v2_controllers[c] = offered && has_word(offered, controller_names[c], ' ');
                if (need[c] && !p->v2_controllers[c]) {
                        say(why, n, "cgroup v2 '%s' does not offer the %s controller", dir, controller_names[c]);
                        return false;
                }
        }
        if (!writable_dir(dir, files)) {
                say(why, n, "cgroup v2 '%s' is not delegated to this user", dir);
                return false;
        }
        snprintf(p->parent[0], sizeof p->parent[0], "%s", dir);
        return true;
}

/* v1: our own cgroup in each controller's hierarchy, where writable; every
 * needed one must be. */
static bool probe_v1(const char *proc_cgroup, const char *mountinfo, const bool need[CG_N], struct cgroup_probe *p,
                     char *why, size_t n)
{
        static const char *const files[] = { "cgroup.procs", NULL };
        bool any = false;
        for (int c = 0; c < CG_N; c++) {
                char own[PATH_MAX], dir[PATH_MAX];
                bool found = own_cgroup_path(proc_cgroup, controller_names[c], own, sizeof own) &&
                             hierarchy_dir(mountinfo, controller_names[c], own, dir, sizeof dir);
                if (found && writable_dir(dir, files)) {
                        snprintf(p->parent[c], sizeof p->parent[c], "%s", dir);
                        any = true;
                        continue;
                }
                if (!need[c])
                        continue;
                if (found)
                        say(why, n, "cgroup v1's %s folder '%s' is not writable", controller_names[c], dir);
                else
                        say(why, n, "cgroup v1 has no %s hierarchy", controller_names[c]);
                return false;
        }
        if (!any)
                say(why, n, "no cgroup v1 hierarchy is writable");
        return any;
}

static const char *first_needed_option(const bool need[CG_N])
{
        for (int c = 0; c < CG_N; c++)
                if (need[c] && controller_options[c])
                        return controller_options[c];
        return "a limit";
}

enum cgroup_mechanism cgroup_probe(const struct trial_limits *l, struct cgroup_probe *p)
{
        bool need[CG_N];
        char why_v2[sizeof p->reason / 2] = "", why_v1[sizeof p->reason / 2] = "";
        *p = (struct cgroup_probe){ .mechanism = CGROUP_NONE };
        wanted_controllers(l, need);

        _cleanup_free_ char *proc_cgroup = read_file("/proc/self/cgroup", 1 << 16, NULL);
        _cleanup_free_ char *mountinfo = read_file("/proc/self/mountinfo", 1 << 22, NULL);
        if (!proc_cgroup || !mountinfo) {
                say(p->reason, sizeof p->reason, "cannot read /proc/self/cgroup or /proc/self/mountinfo; mount /proc");
                return CGROUP_NONE;
        }
        if (probe_v2(proc_cgroup, mountinfo, need, p, why_v2, sizeof why_v2))
                return p->mechanism = CGROUP_V2;
        memset(p->parent, 0, sizeof p->parent);
        if (probe_v1(proc_cgroup, mountinfo, need, p, why_v1, sizeof why_v1))
                return p->mechanism = CGROUP_V1;
        memset(p->parent, 0, sizeof p->parent);
        say(p->reason, sizeof p->reason, "cannot enforce %s here: %s, and %s; %s", first_needed_option(need), why_v2,
                 why_v1, FIX);
        return CGROUP_NONE;
}

void cgroup_probe_summary(const struct cgroup_probe *p, char *buf, size_t n)
{
        struct strbuf sb = { 0 };
        if (p->mechanism == CGROUP_NONE) {
                say(buf, n, "none: %s", p->reason);
                return;
        }
        strbuf_add(&sb, cgroup_mechanism_name(p->mechanism));
        if (p->mechanism == CGROUP_V2)
                strbuf_addf(&sb, " at '%s'", p->parent[0]);
        const char *sep = " (";
        for (int c = 0; c < CG_N; c++) {
                bool have = p->mechanism == CGROUP_V2 ? c != CG_CPUACCT && p->v2_controllers[c] : p->parent[c][0] != '\0';
                if (have) {
                        strbuf_addf(&sb, "%s%s", sep, controller_names[c]);
                        sep = ", ";
                }
        }
        strbuf_add(&sb, *sep == ',' ? ")" : " (no controllers)");
        say(buf, n, "%s", sb.s);
        free(sb.s);
}

/* ---- making one ---- */

static bool valid_name(const char *name)
{
        if (!name[0] || name[0] == '.' || strlen(name) > 200)
                return false;
        for (const char *c = name; *c; c++)
                if (!(('a' <= *c && *c <= 'z') || ('A' <= *c && *c <= 'Z') || ('0' <= *c && *c <= '9') || *c == '.' ||
                      *c == '_' || *c == '-'))
                        return false;
        return true;
}

static struct cgroup *cgroup_alloc(enum cgroup_mechanism m)
{
        struct cgroup *cg = xcalloc(1, sizeof *cg);
        cg->mechanism = m;
        cg->oom_fd = cg->oom_control_fd = -1;
        for (int c = 0; c < CG_N; c++) {
                cg->by_controller[c] = -1;
                cg->dir[c].dirfd = cg->dir[c].join_fd = -1;
        }
        return cg;
}

/* Free without removing anything. */
static void cgroup_free(struct cgroup *cg)
{
        for (size_t i = 0; i < cg->n; i++) {
                tb_closep(&cg->dir[i].dirfd);
                tb_closep(&cg->dir[i].join_fd);
                free(cg->dir[i].path);
        }
        tb_closep(&cg->oom_fd);
        tb_closep(&cg->oom_control_fd);
        free(cg);
}

/* Make PARENT/trialbox-NAME as cg->dir[cg->n] and open it, and the file a
 * child joins it by (cgroup_attach_self). */
static int add_dir(struct cgroup *cg, const char *parent, const char *name, struct tb_error *err)
{
        struct cg_dir *d = &cg->dir[cg->n];
        d->path = xasprintf("%s/trialbox-%s", parent, name);
        if (mkdir(d->path, 0755) < 0) {
                int r = -errno;
                free(d->path);
                d->path = NULL;
                if (r == -EEXIST)
                        return tb_fail(err, r, "the cgroup '%s/trialbox-%s' exists already; remove it (rmdir) or pick another name",
                                       parent, name);
                return tb_fail(err, r, "making the cgroup '%s/trialbox-%s': %s; %s", parent, name, strerror(-r), FIX);
        }
        cg->n++;
        d->dirfd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (d->dirfd >= 0)
                d->join_fd = openat(d->dirfd, cg->mechanism == CGROUP_V1 ? "tasks" : "cgroup.procs",
                                    O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
        if (d->dirfd < 0 || d->join_fd < 0)
                return tb_fail(err, -errno, "opening the cgroup '%s': %s", d->path, strerror(errno));
        return 0;
}

static int set_value(const struct cg_dir *d, const char *file, struct tb_error *err, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
static int set_value(const struct cg_dir *d, const char *file, struct tb_error *err, const char *fmt, ...)
{
        char value[64];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(value, sizeof value, fmt, ap);
        va_end(ap);
        int r = write_at(d->dirfd, file, value);
        if (r < 0)
                return tb_fail(err, r, "setting '%s/%s' to %s: %s", d->path, file, value, strerror(-r));
        return 0;
}

/* v2 lets a cgroup hand controllers to children only when it holds no
 * processes itself (the root excepted): move them into a leaf, once. */
static int move_processes_to_leaf(const char *parent)
{
        _cleanup_close_ int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (pfd < 0)
                return -errno;
        if (mkdirat(pfd, "trialbox-leaf", 0755) < 0 && errno != EEXIST)
                return -errno;
        _cleanup_free_ char *procs = read_at(pfd, "cgroup.procs");
        if (!procs)
                return -errno;
        _cleanup_close_ int leaf = openat(pfd, "trialbox-leaf", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (leaf < 0)
                return -errno;
        char *save = NULL;
        for (char *pid = strtok_r(procs, "\n", &save); pid; pid = strtok_r(NULL, "\n", &save)) {
                int r = write_at(leaf, "cgroup.procs", pid);
                if (r < 0 && r != -ESRCH)
                        return r;
        }
        return 0;
}

static int enable_v2_controllers(const struct cgroup_probe *p, const bool need[CG_N], struct tb_error *err)
{
        _cleanup_close_ int pfd = open(p->parent[0], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (pfd < 0)
                return tb_fail(err, -errno, "opening the cgroup '%s': %s", p->parent[0], strerror(errno));
        bool moved = false;
        for (int c = CG_MEMORY; c <= CG_CPU; c++) {
                _cleanup_free_ char *enabled = read_at(pfd, "cgroup.subtree_control");
                if (!p->v2_controllers[c] || (enabled && has_word(enabled, controller_names[c], ' ')))
                        continue;
                char plus[32];
                snprintf(plus, sizeof plus, "+%s", controller_names[c]);
                int r = write_at(pfd, "cgroup.subtree_control", plus);
                if (r == -EBUSY && !moved) {
                        moved = true;
                        r = move_processes_to_leaf(p->parent[0]);
                        if (r == 0)
                                r = write_at(pfd, "cgroup.subtree_control", plus);
                }
                if (r < 0 && need[c])
                        return tb_fail(err, r, "enabling the %s controller in '%s/cgroup.subtree_control': %s; %s",
                                       controller_names[c], p->parent[0], strerror(-r), FIX);
        }
        return 0;
}

static int create_v2(struct cgroup *cg, const struct cgroup_probe *p, const struct trial_limits *l, const bool need[CG_N],
                     const char *name, struct tb_error *err)
{
        int r = enable_v2_controllers(p, need, err);
        if (r < 0 || (r = add_dir(cg, p->parent[0], name, err)) < 0)
                return r;
        const struct cg_dir *d = &cg->dir[0];
        _cleanup_free_ char *on = read_at(d->dirfd, "cgroup.controllers");
        for (int c = CG_MEMORY; c <= CG_CPU; c++)
                if (on && has_word(on, controller_names[c], ' '))
                        cg->by_controller[c] = 0;
        cg->by_controller[CG_CPUACCT] = 0; /* cpu.stat is always there in v2 */
        if (l->memory_bytes != LIMIT_UNSET) {
                if ((r = set_value(d, "memory.max", err, "%lld", l->memory_bytes)) < 0)
                        return r;
                /* Without swap accounting there is no file, and nothing to close off. */
                r = set_value(d, "memory.swap.max", err, "0");
                if (r < 0 && r != -ENOENT)
                        return r;
        }
        if (l->pids != LIMIT_UNSET && (r = set_value(d, "pids.max", err, "%lld", l->pids)) < 0)
                return r;
        if (l->cpus_milli != LIMIT_UNSET &&
            (r = set_value(d, "cpu.max", err, "%lld %lld", l->cpus_milli * CPU_PERIOD_US / 1000, CPU_PERIOD_US)) < 0)
                return r;
        if (cg->by_controller[CG_MEMORY] >= 0) {
                char events[PATH_MAX + 32];
                snprintf(events, sizeof events, "%s/memory.events", d->path);
                cg->oom_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
                if (cg->oom_fd < 0 || inotify_add_watch(cg->oom_fd, events, IN_MODIFY) < 0)
                        return tb_fail(err, -errno, "watching '%s': %s", events, strerror(errno));
        }
        return 0;
}

static int set_v1_limits(struct cgroup *cg, const struct trial_limits *l, struct tb_error *err)
{
        int r;
        if (l->memory_bytes != LIMIT_UNSET) {
                const struct cg_dir *d = &cg->dir[cg->by_controller[CG_MEMORY]];
                if ((r = set_value(d, "memory.limit_in_bytes", err, "%lld", l->memory_bytes)) < 0)
                        return r;
                /* memory+swap no higher than memory: no swapping out of the limit.
                 * Absent (swap accounting off): there is no swap to limit. */
                r = set_value(d, "memory.memsw.limit_in_bytes", err, "%lld", l->memory_bytes);
                if (r < 0 && r != -ENOENT)
                        return r;
        }
        if (l->pids != LIMIT_UNSET &&
            (r = set_value(&cg->dir[cg->by_controller[CG_PIDS]], "pids.max", err, "%lld", l->pids)) < 0)
                return r;
        if (l->cpus_milli != LIMIT_UNSET) {
                const struct cg_dir *d = &cg->dir[cg->by_controller[CG_CPU]];
                if ((r = set_value(d, "cpu.cfs_period_us", err, "%lld", CPU_PERIOD_US)) < 0 ||
                    (r = set_value(d, "cpu.cfs_quota_us", err, "%lld", l->cpus_milli * CPU_PERIOD_US / 1000)) < 0)
                        return r;
        }
        return 0;
}

static int watch_v1_oom(struct cgroup *cg, struct tb_error *err)
{
        const struct cg_dir *d = &cg->dir[cg->by_controller[CG_MEMORY]];
        cg->oom_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (cg->oom_fd >= 0)
                cg->oom_control_fd = openat(d->dirfd, "memory.oom_control", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (cg->oom_fd < 0 || cg->oom_control_fd < 0)
                return tb_fail(err, -errno, "watching '%s/memory.oom_control': %s", d->path, strerror(errno));
        char reg[32];
        snprintf(reg, sizeof reg, "%d %d", cg->oom_fd, cg->oom_control_fd);
        return set_value(d, "cgroup.event_control", err, "%s", reg);
}

static int create_v1(struct cgroup *cg, const struct cgroup_probe *p, const struct trial_limits *l, const bool need[CG_N],
                     const char *name, struct tb_error *err)
{
        for (int c = 0; c < CG_N; c++) {
                if (!p->parent[c][0])
                        continue;
                /* Co-mounted controllers (cpu,cpuacct) share one folder. */
                for (int e = 0; e < c && cg->by_controller[c] < 0; e++)
                        if (cg->by_controller[e] >= 0 && strcmp(p->parent[e], p->parent[c]) == 0)
                                cg->by_controller[c] = cg->by_controller[e];
                if (cg->by_controller[c] >= 0)
                        continue;
                int r = add_dir(cg, p->parent[c], name, err);
                if (r < 0 && need[c])
                        return r;
                if (r == 0)
                        cg->by_controller[c] = (int)cg->n - 1;
        }
        for (int c = 0; c < CG_N; c++)
                if (need[c] && cg->by_controller[c] < 0)
                        return tb_fail(err, -EOPNOTSUPP, "cannot enforce %s: cgroup v1 has no writable %s folder; %s",
                                       controller_options[c], controller_names[c], FIX);
        int r = set_v1_limits(cg, l, err);
        if (r == 0 && cg->by_controller[CG_MEMORY] >= 0)
                r = watch_v1_oom(cg, err);
        return r;
}

static const char *remove_dirs(struct cgroup *cg);

int cgroup_create(const struct cgroup_probe *p, const struct trial_limits *l, const char *name, struct cgroup **out,
                  struct tb_error *err)
{
        bool need[CG_N];
        *out = NULL;
        if (p->mechanism == CGROUP_NONE)
                return tb_fail(err, -EOPNOTSUPP, "%s", p->reason[0] ? p->reason : "no cgroup mechanism here; " FIX);
        if (!valid_name(name))
                return tb_fail(err, -EINVAL, "'%s' is not a cgroup name; use letters, digits, '.', '_' and '-'", name);
        wanted_controllers(l, need);
        struct cgroup *cg = cgroup_alloc(p->mechanism);
        int r = p->mechanism == CGROUP_V2 ? create_v2(cg, p, l, need, name, err) : create_v1(cg, p, l, need, name, err);
        if (r < 0) {
                remove_dirs(cg);
                cgroup_free(cg);
                return r;
        }
        *out = cg;
        return 0;
}

/* ---- joining ---- */

/* v1: "0" to `tasks` moves the calling thread alone, which the kernel does
 * without the global lock a whole process's move takes (cgroup.procs, or
 * any pid): the first taking of that lock waits for an RCU grace period,
 * 3 to 20 ms on a busy host, in the way of the session's start. The caller
 * is single-threaded (a child after fork), so its thread is the process. */
int cgroup_attach_self(const struct cgroup *cg)
{
        for (size_t i = 0; i < cg->n; i++)
                if (write(cg->dir[i].join_fd, "0", 1) != 1)
                        return -errno;
        return 0;
}

int cgroup_attach_pid(const struct cgroup *cg, pid_t pid, struct tb_error *err)
{
        char buf[32];
        snprintf(buf, sizeof buf, "%d", (int)pid);
        for (size_t i = 0; i < cg->n; i++) {
                int r = write_at(cg->dir[i].dirfd, "cgroup.procs", buf);
                if (r < 0)
                        return tb_fail(err, r, "moving process %d into the cgroup '%s': %s", (int)pid, cg->dir[i].path,
                                       strerror(-r));
        }
        return 0;
}

int cgroup_v2_dirfd(const struct cgroup *cg) { return cg->mechanism == CGROUP_V2 ? cg->dir[0].dirfd : -1; }

const char *cgroup_path(const struct cgroup *cg) { return cg->n ? cg->dir[0].path : ""; }

int cgroup_pids(const struct cgroup *cg, pid_t **pids)
{
        *pids = NULL;
        if (!cg->n)
                return 0;
        _cleanup_free_ char *text = read_at(cg->dir[0].dirfd, "cgroup.procs");
        if (!text)
                return -errno;
        size_t n = 0, cap = 0;
        pid_t *v = NULL;
        char *save = NULL;
        for (char *t = strtok_r(text, "\n", &save); t; t = strtok_r(NULL, "\n", &save)) {
                GREEDY_REALLOC(v, cap, n + 1);
                v[n++] = (pid_t)strtol(t, NULL, 10);
        }
        *pids = v;
        return (int)n;
}

/* ---- ending ---- */

int cgroup_signal_all(const struct cgroup *cg, int sig)
{
        _cleanup_free_ pid_t *pids = NULL;
        int n = cgroup_pids(cg, &pids), sent = 0;
        for (int i = 0; i < n; i++)
                if (pids[i] > 0 && kill(pids[i], sig) == 0)
                        sent++;
        return n < 0 ? n : sent;
}

int cgroup_kill_all(struct cgroup *cg, struct tb_error *err)
{
        bool has_kill = cg->mechanism == CGROUP_V2 && write_at(cg->dir[0].dirfd, "cgroup.kill", "1") == 0;
        for (int waited = 0; waited < 5000; waited++) {
                _cleanup_free_ pid_t *pids = NULL;
                int n = cgroup_pids(cg, &pids);
                if (n < 0)
                        return tb_fail(err, n, "listing the processes of the cgroup '%s': %s", cgroup_path(cg), strerror(-n));
                if (n == 0)
                        return 0;
                for (int i = 0; !has_kill && pids && i < n; i++)
                        if (pids[i] > 0)
                                kill(pids[i], SIGKILL);
                sleep_ms(1);
        }
        return tb_fail(err, -EBUSY, "processes are left in the cgroup '%s' after SIGKILL; see its cgroup.procs",
                       cgroup_path(cg));
}

/* Remove each folder: the first one left behind, or NULL. */
static const char *remove_dirs(struct cgroup *cg)
{
        const char *left = NULL;
        for (size_t i = 0; i < cg->n; i++) {
                const char *path = cg->dir[i].path;
                /* The kernel lets the last process go a moment after it died. */
                for (int tries = 0; path && rmdir(path) < 0; tries++) {
                        if (errno == EBUSY && tries < 500) {
                                sleep_ms(2);
                                continue;
                        }
                        if (errno != ENOENT && !left)
                                left = path;
                        break;
                }
        }
        return left;
}

int cgroup_destroy(struct cgroup *cg, struct tb_error *err)
{
        if (!cg)
                return 0;
        int r = cgroup_kill_all(cg, err);
        const char *left = remove_dirs(cg);
        if (r == 0 && left)
                r = tb_fail(err, -EBUSY, "the cgroup '%s' is left behind; remove it with rmdir when it is empty", left);
        cgroup_free(cg);
        return r;
}

/* ---- usage and events ---- */

static const struct cg_dir *dir_of(const struct cgroup *cg, enum cgroup_controller c)
{
        return cg->by_controller[c] >= 0 ? &cg->dir[cg->by_controller[c]] : NULL;
}

static long long oom_kills(const struct cgroup *cg)
{
        const struct cg_dir *m = dir_of(cg, CG_MEMORY);
        if (!m)
                return -1;
        long long v = keyed_at(m->dirfd, cg->mechanism == CGROUP_V2 ? "memory.events" : "memory.oom_control", "oom_kill");
        return v;
}

static void usage_v2(const struct cgroup *cg, struct trial_usage *u)
{
        int dfd = cg->dir[0].dirfd;
        _cleanup_free_ char *cpu = read_at(dfd, "cpu.stat");
        if (cpu && keyed_value(cpu, "user_usec") >= 0) {
                u->cpu_user_ms = keyed_value(cpu, "user_usec") / 1000;
                u->cpu_system_ms = keyed_value(cpu, "system_usec") / 1000;
        }
        if (dir_of(cg, CG_MEMORY)) {
                long long peak = number_at(dfd, "memory.peak");
                if (peak < 0 && cg->sampled_peak > 0)
                        peak = cg->sampled_peak;
                if (peak >= 0) {
                        u->peak_memory_bytes = peak;
                        u->source = USAGE_CGROUP;
                }
        }
}

static void usage_v1(const struct cgroup *cg, struct trial_usage *u)
{
        const struct cg_dir *acct = dir_of(cg, CG_CPUACCT), *mem = dir_of(cg, CG_MEMORY);
        /* cpuacct.usage is exact; usage_user and usage_sys come from ticks
         * (10% off and more): they only split it. */
        long long total_ns = acct ? number_at(acct->dirfd, "cpuacct.usage") : -1;
        long long user_ns = acct ? number_at(acct->dirfd, "cpuacct.usage_user") : -1;
        long long sys_ns = acct ? number_at(acct->dirfd, "cpuacct.usage_sys") : -1;
        if (total_ns >= 0 && user_ns >= 0 && sys_ns >= 0) {
                long double user_share = user_ns + sys_ns > 0 ? (long double)user_ns / (long double)(user_ns + sys_ns) : 1;
                u->cpu_user_ms = (long long)((long double)total_ns * user_share / 1000000);
                u->cpu_system_ms = total_ns / 1000000 - u->cpu_user_ms;
        }
        long long peak = mem ? number_at(mem->dirfd, "memory.max_usage_in_bytes") : -1;
        if (peak >= 0) {
                u->peak_memory_bytes = peak;
                u->source = USAGE_CGROUP;
        }
}

void cgroup_usage(const struct cgroup *cg, struct trial_usage *u)
{
        if (cg->mechanism == CGROUP_V2)
                usage_v2(cg, u);
        else
                usage_v1(cg, u);
        long long kills = oom_kills(cg);
        if (kills >= 0)
                u->oom_kills = kills;
        const struct cg_dir *p = dir_of(cg, CG_PIDS);
        long long refused = p ? keyed_at(p->dirfd, "pids.events", "max") : -1;
        if (refused >= 0)
                u->pids_refused = refused;
}

void cgroup_sample_memory(struct cgroup *cg)
{
        const struct cg_dir *m = dir_of(cg, CG_MEMORY);
        if (!m || cg->mechanism != CGROUP_V2)
                return;
        long long now = number_at(m->dirfd, "memory.current");
        if (now > cg->sampled_peak)
                cg->sampled_peak = now;
}

int cgroup_oom_fd(const struct cgroup *cg) { return cg->oom_fd; }

long long cgroup_oom_event(struct cgroup *cg)
{
        char buf[4096];
        if (cg->oom_fd < 0)
                return -EBADF;
        /* Drain: inotify events or the eventfd's counter; what counts is the file. */
        while (read(cg->oom_fd, buf, sizeof buf) > 0) {
        }
        long long kills = oom_kills(cg);
        return kills >= 0 ? kills : -EIO;
}
