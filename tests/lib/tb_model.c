/* The toolkit's stand-in model server (tests/fakes/model-server.py) and the
 * network around it: a real Harness CLI in a Trial reaching a model on the
 * host's loopback, and nothing else (tb_test.h). */
#define _GNU_SOURCE
#include "tb_test.h"
#include "network/proxy.h"

#include <check.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

void model_server_start(struct model_server *m, const char *config)
{
        m->dir = tmpdir_new();
        m->record = path_in(m->dir, "record.jsonl");
        _cleanup_free_ char *cfg = path_in(m->dir, "config.json");
        if (config)
                write_text(cfg, config, 0644);
        _cleanup_free_ char *out = path_in(m->dir, "server.out"), *err = path_in(m->dir, "server.err");
        char *argv[] = { "/usr/bin/env", "python3", FAKE("model-server.py"), "0", "--record", m->record,
                         config ? "--config" : NULL, cfg, NULL };
        m->pid = spawn_argv(NULL, argv, out, err);
        m->port = 0;
        for (int i = 0; i < 500 && !m->port; i++) {
                _cleanup_free_ char *text = read_text(out);
                if (!text || sscanf(text, "PORT=%d", &m->port) != 1)
                        usleep(20000);
        }
        _cleanup_free_ char *why = read_text(err);
        ck_assert_msg(m->port > 0, "the stand-in model server did not start: %s", why ? why : "");
}

void model_server_stop(struct model_server *m)
{
        kill(m->pid, SIGKILL);
        wait_status(m->pid);
        tmpdir_remove(m->dir);
        free(m->dir);
        free(m->record);
}

void http_answer_ok(int c)
{
        static const char reply[] = "HTTP/1.0 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n";
        char buf[4096];
        size_t len = 0;
        ssize_t n;
        while (len < sizeof buf - 1 && (n = read(c, buf + len, sizeof buf - 1 - len)) > 0) {
                len += (size_t)n;
                buf[len] = '\0';
                if (strstr(buf, "\r\n\r\n"))
                        break;
        }
        (void)!write(c, reply, sizeof reply - 1);
        close(c);
}

static long long count_at(json_object *j, const char *a, const char *b)
{
        json_object *v = NULL;
        if (!json_object_object_get_ex(j, a, &v) || !v)
                return 0;
        if (b && (!json_object_object_get_ex(v, b, &v) || !v))
                return 0;
        return json_object_get_int64(v);
}

void model_server_sums(const struct model_server *m, struct model_sums *s)
{
        *s = (struct model_sums){ 0 };
        _cleanup_free_ char *text = read_text(m->record);
        ck_assert_msg(text != NULL, "the stand-in server recorded nothing");
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
                json_object *j = json_tokener_parse(line), *u, *api, *model;
                ck_assert_ptr_nonnull(j);
                ck_assert(json_object_object_get_ex(j, "api", &api));
                if (strcmp(json_object_get_string(api), "responses") != 0 &&
                    strcmp(json_object_get_string(api), "messages") != 0) {
                        json_object_put(j);
                        continue;
                }
                ck_assert(json_object_object_get_ex(j, "usage", &u));
                if (json_object_object_get_ex(j, "model", &model))
                        snprintf(s->model, sizeof s->model, "%s", json_object_get_string(model));
                s->requests++;
                if (strcmp(json_object_get_string(api), "responses") == 0) {
                        s->input += count_at(u, "input_tokens", NULL);
                        s->cached_input += count_at(u, "input_tokens_details", "cached_tokens");
                        s->cache_write_input += count_at(u, "input_tokens_details", "cache_write_tokens");
                        s->output += count_at(u, "output_tokens", NULL);
                        s->reasoning += count_at(u, "output_tokens_details", "reasoning_tokens");
                } else {
                        long long read = count_at(u, "cache_read_input_tokens", NULL);
                        long long write = count_at(u, "cache_creation_input_tokens", NULL);
                        s->input += count_at(u, "input_tokens", NULL) + read + write;
                        s->cached_input += read;
                        s->cache_write_input += write;
                        s->output += count_at(u, "output_tokens", NULL);
                }
                json_object_put(j);
        }
}

void assert_tokens_are_the_servers(json_object *t, const struct model_server *m, long long requests, const char *source)
{
        struct model_sums want;
        model_server_sums(m, &want);
        ck_assert_int_eq(want.requests, requests);
        const char *text = json_object_to_json_string(t);
        static const char *const names[] = { "input",  "cached_input", "cache_write_input",
                                             "output", "reasoning",    "requests" };
        const long long wants[] = { want.input,  want.cached_input, want.cache_write_input,
                                    want.output, want.reasoning,    want.requests };
        for (size_t i = 0; i < sizeof names / sizeof *names; i++)
                ck_assert_msg(json_object_get_int64(json_get(t, names[i])) == wants[i],
                              "tokens.%s is %lld, the server sent %lld: %s", names[i],
                              (long long)json_object_get_int64(json_get(t, names[i])), wants[i], text);
        json_object *models = json_get(t, "models");
        ck_assert_uint_eq(json_object_array_length(models), 1);
        ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(models, 0)), want.model);
        ck_assert(!json_object_get_boolean(json_get(t, "partial")));
        ck_assert_str_eq(json_object_get_string(json_get(t, "source")), source);
}

int closed_port(void)
{
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof a;
        ck_assert(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
        ck_assert(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
        close(fd);
        return ntohs(a.sin_port);
}

char *endpoints_nowhere(const char *names)
{
        ck_assert_msg(proxy_test_hosts_enabled(), "this build ignores TRIALBOX_TEST_HOSTS (TRIALBOX_TESTING=OFF): the "
                                                  "CLI's own endpoints would be reached for real");
        static char env[1024];
        int port = closed_port();
        size_t n = (size_t)snprintf(env, sizeof env, "TRIALBOX_TEST_HOSTS=");
        _cleanup_free_ char *copy = xstrdup(names);
        char *save = NULL;
        for (char *name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save))
                n += (size_t)snprintf(env + n, sizeof env - n, "%s%s=127.0.0.1:%d", n > 19 ? "," : "", name, port);
        return env;
}

void standin_new(struct standin *s, const char *cli, const struct fixture *f, const struct model_server *m)
{
        bool codex = strcmp(cli, "codex") == 0;
        _cleanup_free_ char *home = path_in(f->dir, "codex-home"), *cfg = path_in(f->dir, "config");
        size_t n = 0;
        *s = (struct standin){ .allow = xasprintf("127.0.0.1:%d", m->port) };
        s->env[n++] = xstrdup(endpoints_nowhere(codex ? CODEX_ENDPOINTS : CLAUDE_ENDPOINTS));
        s->env[n++] = xstrdup("TRIALBOX_ENV_ALLOW=ANTHROPIC_BASE_URL:CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC");
        if (codex) {
                write_in(home, "auth.json", "{\"OPENAI_API_KEY\": \"tbtest-key\"}", 0600);
                s->env[n++] = xasprintf("CODEX_HOME=%s", home);
                s->provider = xasprintf("model_providers.standin={name=\"Stand-in\",base_url=\"http://127.0.0.1:%d/v1\","
                                        "wire_api=\"responses\"}",
                                        m->port);
        } else {
                write_in(cfg, "trialbox/credentials.json", "{\"claude\": {\"setup_token\": \"tbtest-oauth\"}}", 0600);
                s->env[n++] = xasprintf("XDG_CONFIG_HOME=%s", cfg);
                s->env[n++] = xasprintf("ANTHROPIC_BASE_URL=http://127.0.0.1:%d", m->port);
                s->env[n++] = xstrdup("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1");
        }
}

void standin_free(struct standin *s)
{
        for (size_t i = 0; s->env[i]; i++)
                free(s->env[i]);
        free(s->allow);
        free(s->provider);
}
