/* The toolkit's files, text, JSON and suite runner (tb_test.h). */
#define _GNU_SOURCE
#include "tb_test.h"
#include "base/util.h"
#include "plugin/host.h"

#include <check.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the suite ---- */

int run_suite(Suite *s)
{
        SRunner *sr = srunner_create(s);
        srunner_run_all(sr, CK_ENV);
        int failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

TCase *tb_tcase(Suite *s, const char *name, int seconds)
{
        TCase *tc = tcase_create(name);
        if (seconds > 0)
                tcase_set_timeout(tc, seconds);
        suite_add_tcase(s, tc);
        return tc;
}

int tb_run_tests(const char *name, int seconds, void (*add_tests)(Suite *s, TCase *tc))
{
        Suite *s = suite_create(name);
        add_tests(s, tb_tcase(s, name, seconds));
        return run_suite(s);
}

int tb_run_tests_needing(const char *program, const char *name, int seconds,
                         void (*add_tests)(Suite *s, TCase *tc))
{
        _cleanup_free_ char *found = find_on_path(program, getenv("PATH"));
        if (!found) {
                printf("%s is not installed: skipped\n", program);
                return 77;
        }
        return tb_run_tests(name, seconds, add_tests);
}

void skip_note(const char *test, const char *why)
{
        fprintf(stderr, "%s: part skipped: %s\n", test, why);
}

bool skip_unless_root(const char *test, const char *why)
{
        if (geteuid() == 0)
                return false;
        skip_note(test, why);
        return true;
}

/* ---- files ---- */

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

void tmpdir_freep(char **dir)
{
        if (!*dir)
                return;
        tmpdir_remove(*dir);
        free(*dir);
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

bool exists(const char *path)
{
        struct stat st;
        return lstat(path, &st) == 0;
}

bool exists_in(const char *dir, const char *rel)
{
        _cleanup_free_ char *p = path_in(dir, rel);
        return exists(p);
}

char *listing(const char *dir)
{
        struct dirent **names = NULL;
        int n = scandir(dir, &names, NULL, alphasort);
        struct strbuf sb = { 0 };
        strbuf_add(&sb, "");
        for (int i = 0; i < n; i++) {
                if (strcmp(names[i]->d_name, ".") != 0 && strcmp(names[i]->d_name, "..") != 0)
                        strbuf_addf(&sb, "%s%s", sb.len ? " " : "", names[i]->d_name);
                free(names[i]);
        }
        free(names);
        return sb.s;
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

char *read_text_in(const char *dir, const char *rel)
{
        _cleanup_free_ char *p = path_in(dir, rel);
        return read_text(p);
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

struct json_object *json_get(struct json_object *j, const char *key)
{
        json_object *v = NULL;
        ck_assert_msg(json_object_object_get_ex(j, key, &v), "no '%s'", key);
        return v;
}

/* ---- text ---- */

bool has_line(const char *text, const char *line) { return count_line(text, line) > 0; }

size_t count_line(const char *text, const char *line)
{
        size_t n = strlen(line), found = 0;
        for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                if (strncmp(p, line, n) == 0 && (p[n] == '\n' || p[n] == '\0'))
                        found++;
        return found;
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

char *last_line(const char *text)
{
        size_t n = strlen(text);
        if (n && text[n - 1] == '\n')
                n--;
        size_t start = n;
        while (start && text[start - 1] != '\n')
                start--;
        return strndup(text + start, n - start);
}

char *strv_joined(const struct strv *v, const char *open, const char *close)
{
        struct strbuf sb = { 0 };
        strbuf_add(&sb, "");
        for (size_t i = 0; i < v->n; i++)
                strbuf_addf(&sb, "%s%s%s%s", i ? " " : "", open, v->v[i], close);
        return sb.s;
}

int strv_find(const struct strv *v, const char *x)
{
        for (size_t i = 0; i < v->n; i++)
                if (strcmp(v->v[i], x) == 0)
                        return (int)i;
        return -1;
}

int strv_find_triple(const struct strv *v, const char *flag, const char *src, const char *dest)
{
        for (size_t i = 0; i + 2 < v->n; i++)
                if (strcmp(v->v[i], flag) == 0 && strcmp(v->v[i + 1], src) == 0 && strcmp(v->v[i + 2], dest) == 0)
                        return (int)i;
        return -1;
}

/* ---- assertions ---- */

void assert_file_holds(const char *path, const char *want)
{
        _cleanup_free_ char *text = read_text(path);
        ck_assert_msg(text && strcmp(text, want) == 0, "'%s' holds '%s', not '%s'", path, text ? text : "(nothing)",
                      want);
}

void assert_file_in(const char *dir, const char *rel, const char *want)
{
        _cleanup_free_ char *p = path_in(dir, rel);
        assert_file_holds(p, want);
}

void assert_endpoints_are(const struct tb_host *host, const struct endpoint_want want[], size_t n)
{
        size_t got;
        const struct host_endpoint *e = host_endpoints(host, &got);
        ck_assert_msg(got == n, "%zu endpoints declared, not %zu", got, n);
        for (size_t i = 0; i < n; i++) {
                ck_assert_msg(strcmp(e[i].pattern, want[i].pattern) == 0, "endpoint %zu is '%s', not '%s'", i,
                              e[i].pattern, want[i].pattern);
                ck_assert_msg(e[i].required == want[i].required, "endpoint '%s' is %s", e[i].pattern,
                              e[i].required ? "required" : "optional");
        }
}
