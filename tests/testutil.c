#define _GNU_SOURCE
#include "testutil.h"
#include "base/cleanup.h"
#include "base/strbuf.h"
#include "base/path.h"

#include <check.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

char *tmpdir_new(void)
{
        char tmpl[] = "/tmp/tbtest.XXXXXX";
        if (!mkdtemp(tmpl))
                abort();
        chmod(tmpl, 0755);
        return strdup(tmpl);
}

void tmpdir_remove(const char *dir)
{
        char *argv[] = { "/bin/rm", "-rf", (char *)dir, NULL };
        struct proc_result r;
        run_argv(&r, NULL, argv);
        proc_result_free(&r);
}

void write_bytes(const char *path, const void *data, size_t len, mode_t mode)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ck_assert_msg(fd >= 0, "writing '%s': %s", path, strerror(errno));
        ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
        ck_assert_int_eq(fchmod(fd, mode), 0);
        close(fd);
}

void write_text(const char *path, const char *text, mode_t mode) { write_bytes(path, text, strlen(text), mode); }

char *path_in(const char *dir, const char *rel)
{
        char *p;
        if (asprintf(&p, "%s/%s", dir, rel) < 0)
                abort();
        return p;
}

void write_in(const char *dir, const char *rel, const char *text, mode_t mode)
{
        _cleanup_free_ char *p = path_in(dir, rel);
        _cleanup_free_ char *d = path_dirname(p);
        ck_assert_int_eq(mkdir_p(d, 0700), 0);
        write_text(p, text, mode);
}

struct json_object *results_line(const char *results_path, const char *id)
{
        char *text = read_text(results_path);
        json_object *found = NULL;
        for (char *save = NULL, *l = text ? strtok_r(text, "\n", &save) : NULL; l && !found;
             l = strtok_r(NULL, "\n", &save)) {
                json_object *j = json_tokener_parse(l), *v;
                if (j && json_object_object_get_ex(j, "id", &v) && strcmp(json_object_get_string(v), id) == 0)
                        found = j;
                else
                        json_object_put(j);
        }
        free(text);
        return found;
}

void skip_note(const char *test, const char *why)
{
        fprintf(stderr, "%s: part skipped: %s\n", test, why);
}

void write_plan(const char *path, const char *text)
{
        static const char trial[] = "{\"id\":";
        struct strbuf sb = { 0 };
        strbuf_add(&sb, "");
        for (const char *line = text; *line;) {
                size_t n = strcspn(line, "\n");
                n += line[n] == '\n';
                size_t skip = 0;
                if (geteuid() == 0 && strncmp(line, trial, strlen(trial)) == 0) {
                        strbuf_add(&sb, "{\"root_session\":true,");
                        skip = 1; /* the '{' just written */
                }
                _cleanup_free_ char *rest = strndup(line + skip, n - skip);
                strbuf_add(&sb, rest);
                line += n;
        }
        write_text(path, sb.s, 0644);
        free(sb.s);
}

void copy_file(const char *from, const char *to, mode_t mode, size_t max)
{
        size_t len = 0;
        char *buf = read_all(from, &len, true);
        ck_assert_msg(buf != NULL, "reading '%s': %s", from, strerror(errno));
        write_bytes(to, buf, len < max ? len : max, mode);
        free(buf);
}

mode_t mode_of(const char *path)
{
        struct stat st;
        ck_assert_msg(lstat(path, &st) == 0, "'%s': %s", path, strerror(errno));
        return st.st_mode & 07777;
}

char *read_fd(int fd)
{
        size_t cap = 4096, len = 0;
        char *buf = malloc(cap);
        ssize_t n;
        while ((n = read(fd, buf + len, cap - len - 1)) != 0) {
                if (n < 0 && errno == EINTR)
                        continue;
                ck_assert_msg(n > 0, "reading fd %d: %s", fd, strerror(errno));
                len += (size_t)n;
                if (len + 1 == cap)
                        buf = realloc(buf, cap *= 2);
        }
        buf[len] = '\0';
        return buf;
}

char *read_all(const char *path, size_t *len, bool follow_links)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC | (follow_links ? 0 : O_NOFOLLOW));
        if (fd < 0)
                return NULL;
        size_t cap = 4096, got = 0;
        char *buf = malloc(cap + 1);
        ssize_t k;
        while ((k = read(fd, buf + got, cap - got)) > 0) {
                got += (size_t)k;
                if (got == cap)
                        buf = realloc(buf, (cap *= 2) + 1);
        }
        close(fd);
        buf[got] = '\0';
        *len = got;
        return buf;
}

int run_suite(Suite *s)
{
        SRunner *sr = srunner_create(s);
        srunner_run_all(sr, CK_ENV);
        int failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

char *read_text(const char *path)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        size_t cap = 4096, len = 0;
        char *buf = malloc(cap);
        ssize_t n;
        while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
                len += (size_t)n;
                if (len + 1 == cap)
                        buf = realloc(buf, cap *= 2);
        }
        buf[len] = '\0';
        close(fd);
        return buf;
}

bool has_line(const char *text, const char *line)
{
        size_t n = strlen(line);
        for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                if (strncmp(p, line, n) == 0 && (p[n] == '\n' || p[n] == '\0'))
                        return true;
        return false;
}

bool one_line(const char *s)
{
        size_t n = strlen(s);
        return n > 1 && s[n - 1] == '\n' && memchr(s, '\n', n - 1) == NULL;
}

size_t count_lines(const char *text)
{
        size_t n = 0;
        for (; *text; text++)
                n += *text == '\n';
        return n;
}

void apply_env(char *const env[])
{
        for (size_t i = 0; env && env[i]; i++) {
                char *eq = strchr(env[i], '=');
                if (!eq) {
                        unsetenv(env[i]);
                        continue;
                }
                char *name = strndup(env[i], (size_t)(eq - env[i]));
                setenv(name, eq + 1, 1);
                free(name);
        }
}

static int to_status(int w) { return WIFEXITED(w) ? WEXITSTATUS(w) : 128 + WTERMSIG(w); }

pid_t spawn_argv(char *const env[], char *const argv[], const char *out_file, const char *err_file)
{
        pid_t pid = fork();
        if (pid == 0) {
                int in = open("/dev/null", O_RDONLY);
                int out = open(out_file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
                int err = open(err_file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
                dup2(in, 0);
                dup2(out, 1);
                dup2(err, 2);
                apply_env(env);
                execv(argv[0], argv);
                _exit(127);
        }
        return pid;
}

int wait_status(pid_t pid)
{
        int w;
        while (waitpid(pid, &w, 0) < 0)
                ;
        return to_status(w);
}

void run_argv(struct proc_result *r, char *const env[], char *const argv[])
{
        char outp[] = "/tmp/tbtest-out.XXXXXX", errp[] = "/tmp/tbtest-err.XXXXXX";
        int a = mkstemp(outp), b = mkstemp(errp);
        close(a);
        close(b);
        pid_t pid = spawn_argv(env, argv, outp, errp);
        r->status = wait_status(pid);
        r->out = read_text(outp);
        r->err = read_text(errp);
        unlink(outp);
        unlink(errp);
}

void proc_result_free(struct proc_result *r)
{
        free(r->out);
        free(r->err);
}

char *outcome_field(const char *output_dir, const char *field)
{
        char path[4096];
        snprintf(path, sizeof path, "%s/outcome.json", output_dir);
        char *text = read_text(path);
        if (!text)
                return NULL;
        json_object *j = json_tokener_parse(text), *v;
        free(text);
        if (!j)
                return NULL;
        char *res = NULL;
        if (json_object_object_get_ex(j, field, &v))
                res = strdup(v ? json_object_get_string(v) : "null");
        json_object_put(j);
        return res;
}

bool host_process_with(const char *marker)
{
        DIR *d = opendir("/proc");
        struct dirent *e;
        bool found = false;
        char self[32];
        snprintf(self, sizeof self, "%d", (int)getpid());
        while (!found && d && (e = readdir(d))) {
                if (e->d_name[0] < '0' || e->d_name[0] > '9' || strcmp(e->d_name, self) == 0)
                        continue;
                char path[300];
                snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        continue;
                char buf[4096];
                ssize_t n = read(fd, buf, sizeof buf - 1);
                close(fd);
                if (n <= 0)
                        continue;
                for (ssize_t i = 0; i < n; i++)
                        if (buf[i] == '\0')
                                buf[i] = ' ';
                buf[n] = '\0';
                found = strstr(buf, marker) != NULL;
        }
        if (d)
                closedir(d);
        return found;
}

bool wait_for_file(const char *path, int ms)
{
        for (int waited = 0; waited < ms; waited += 10) {
                if (access(path, F_OK) == 0)
                        return true;
                struct timespec ts = { 0, 10 * 1000 * 1000 };
                nanosleep(&ts, NULL);
        }
        return access(path, F_OK) == 0;
}

void fixture_new(struct fixture *f)
{
        f->dir = tmpdir_new();
        snprintf(f->repo, sizeof f->repo, "%s/repo", f->dir);
        snprintf(f->out, sizeof f->out, "%s/out", f->dir);
        if (mkdir(f->repo, 0755) < 0)
                abort();
}

void fixture_free(struct fixture *f)
{
        tmpdir_remove(f->dir);
        free(f->dir);
}

void tb_argv(char **argv, size_t cap, const char *harness, const struct fixture *f, const char *const extra[])
{
        size_t n = 0;
        const char *base[] = { TRIALBOX_BIN, "run", "--harness", harness, "--repo", f->repo, "--output-dir", f->out };
        for (size_t i = 0; i < sizeof base / sizeof *base; i++)
                argv[n++] = (char *)base[i];
        /* As root, a session runs as root only when asked (issue 10): these
         * runs keep their root-owned fixtures and ask; test_isolation runs
         * the --user path. */
        if (geteuid() == 0)
                argv[n++] = "--root-session";
        for (size_t i = 0; extra && extra[i] && n + 1 < cap; i++)
                argv[n++] = (char *)extra[i];
        argv[n] = NULL;
}

char **tb_env(char *const more[])
{
        static char *env[64];
        size_t n = 0;
        env[n++] = "TRIALBOX_PLUGIN_PATH=" PLUGIN_BUILD_DIR;
        env[n++] = "TRIALBOX_NO_SANDBOX";
        env[n++] = "TRIALBOX_BWRAP";
        for (size_t i = 0; more && more[i] && n + 1 < 64; i++)
                env[n++] = more[i];
        env[n] = NULL;
        return env;
}

void tb_run(struct proc_result *r, const char *harness, const struct fixture *f, char *const env[],
            const char *const extra[])
{
        char *argv[64];
        tb_argv(argv, 64, harness, f, extra);
        run_argv(r, tb_env(env), argv);
}

char *marker(const char *what)
{
        static unsigned n;
        char *m;
        if (asprintf(&m, "%s-%d-%u-%ld", what, (int)getpid(), n++, (long)time(NULL)) < 0)
                abort();
        return m;
}

bool host_can(const char *cmd)
{
        char *argv[] = { "/bin/sh", "-c", (char *)cmd, NULL };
        struct proc_result r;
        run_argv(&r, NULL, argv);
        bool ok = r.status == 0;
        proc_result_free(&r);
        return ok;
}
