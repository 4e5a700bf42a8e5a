/* The report's page in a real browser: `trialbox report --html` on results
 * whose names are hostile, then Debian's chromium, headless, on the file:
 * its DOM must hold each arm with its numbers and no element the results
 * planted, and its screenshot must show the page drawn (decoded by
 * tests/lib/png_colours.py, the standard library's zlib only). Exit 77 (skipped)
 * without chromium; CI installs it. */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tb_test.h"

static char *chromium;

/* Two arms, one named to run a script; a task whose name closes a tag and
 * opens an attribute. By hand: A 2/3, the other 3/4; per task t1 A 1/2 vs
 * 2/2, "x" A 1/1 vs 1/2. */
static const char results[] =
        "{\"id\":\"1\",\"harness\":\"codex\",\"arm\":\"A\",\"task\":\"t1\",\"outcome\":\"completed\",\"duration_ms\":1000,"
        "\"grade\":{\"status\":\"passed\",\"score\":1,\"detail\":\"<img src=x onerror=alert(2)>\"},"
        "\"tokens\":{\"input\":2000,\"cached_input\":0,\"output\":100,\"reasoning\":0,\"requests\":1,"
        "\"models\":[\"gpt-5\"]}}\n"
        "{\"id\":\"2\",\"harness\":\"codex\",\"arm\":\"A\",\"task\":\"t1\",\"outcome\":\"failed\",\"duration_ms\":3000,"
        "\"grade\":{\"status\":\"failed\",\"score\":0}}\n"
        "{\"id\":\"3\",\"harness\":\"codex\",\"arm\":\"A\",\"task\":\"\\\"><b onmouseover=alert(3)>x\",\"outcome\":"
        "\"completed\",\"duration_ms\":2000,\"grade\":{\"status\":\"passed\",\"score\":1}}\n"
        "{\"id\":\"4\",\"harness\":\"claude\",\"arm\":\"<script>alert(1)</script>\",\"task\":\"t1\",\"outcome\":"
        "\"completed\",\"duration_ms\":4000,\"grade\":{\"status\":\"passed\",\"score\":1}}\n"
        "{\"id\":\"5\",\"harness\":\"claude\",\"arm\":\"<script>alert(1)</script>\",\"task\":\"t1\",\"outcome\":"
        "\"completed\",\"duration_ms\":4000,\"grade\":{\"status\":\"passed\",\"score\":1}}\n"
        "{\"id\":\"6\",\"harness\":\"claude\",\"arm\":\"<script>alert(1)</script>\",\"task\":\"\\\"><b onmouseover="
        "alert(3)>x\",\"outcome\":\"completed\",\"duration_ms\":5000,\"grade\":{\"status\":\"passed\",\"score\":1}}\n"
        "{\"id\":\"7\",\"harness\":\"claude\",\"arm\":\"<script>alert(1)</script>\",\"task\":\"\\\"><b onmouseover="
        "alert(3)>x\",\"outcome\":\"completed\",\"duration_ms\":5000,\"grade\":{\"status\":\"failed\",\"score\":0}}\n";

struct page {
        char *dir, *results, *prices, *html, *url;
};

static void page_new(struct page *p)
{
        p->dir = tmpdir_new();
        p->results = path_in(p->dir, "plan.results.jsonl");
        p->prices = path_in(p->dir, "prices.json");
        p->html = path_in(p->dir, "report.html");
        p->url = xasprintf("file://%s", p->html);
        write_text(p->results, results, 0644);
        write_text(p->prices, "{\"gpt-5\": {\"input\": 1.25, \"output\": 10}}", 0644);
        struct proc_result r;
        run_argv(&r, NULL,
                 (char *[]){ TRIALBOX_BIN, "report", p->results, "--by", "arm", "--prices", p->prices, "--html", p->html,
                             NULL });
        ck_assert_msg(r.status == 0, "report --html: status %d, stderr %s", r.status, r.err);
        proc_result_free(&r);
}

static void page_free(struct page *p)
{
        tmpdir_remove(p->dir);
        free(p->dir);
        free(p->results);
        free(p->prices);
        free(p->html);
        free(p->url);
}

/* chromium, headless, with a profile of its own, doing `what` (--dump-dom or
 * --screenshot=FILE) on the page. */
static void browse(struct proc_result *r, const struct page *p, const char *what)
{
        char *profile = path_in(p->dir, "profile");
        char *user_data = xasprintf("--user-data-dir=%s", profile);
        char *argv[] = { chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                         "--disable-background-networking", "--disable-component-update", "--disable-sync",
                         user_data, "--window-size=1000,1200", (char *)what, p->url, NULL };
        run_argv(r, NULL, argv);
        tmpdir_remove(profile);
        free(profile);
        free(user_data);
}

/* The text of an HTML serialization: tags dropped, the five entities read. */
static char *dom_text(const char *html)
{
        struct strbuf sb = { 0 };
        static const struct {
                const char *entity, *c;
        } entities[] = { { "&lt;", "<" }, { "&gt;", ">" }, { "&amp;", "&" }, { "&quot;", "\"" }, { "&#39;", "'" } };
        bool in_tag = false;
        for (const char *s = html; *s; s++) {
                if (in_tag) {
                        in_tag = *s != '>';
                        continue;
                }
                if (*s == '<') {
                        in_tag = true;
                        strbuf_add(&sb, " ");
                        continue;
                }
                size_t e = 0;
                while (e < TB_ARRAY_SIZE(entities) && !str_has_prefix(s, entities[e].entity))
                        e++;
                if (e < TB_ARRAY_SIZE(entities)) {
                        strbuf_add(&sb, entities[e].c);
                        s += strlen(entities[e].entity) - 1;
                        continue;
                }
                char c[2] = { *s, '\0' };
                strbuf_add(&sb, c);
        }
        return sb.s;
}

START_TEST(the_page_is_self_contained_and_escapes_every_name)
{
        struct page p;
        page_new(&p);
        char *html = read_text(p.html);
        ck_assert_ptr_nonnull(html);
        /* Nothing to fetch, nothing to run: no script, link, import or URL. */
        const char *const never[] = { "<script", "<link", "@import", "url(", "http:", "https:", "<img", "<b onmouseover",
                                      "src=", "onerror=" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(never); i++)
                ck_assert_msg(!strstr(html, never[i]), "the page holds '%s'", never[i]);
        ck_assert_ptr_nonnull(strstr(html, "default-src 'none'"));
        ck_assert_ptr_nonnull(strstr(html, "&lt;script&gt;alert(1)&lt;/script&gt;"));
        ck_assert_ptr_nonnull(strstr(html, "&quot;&gt;&lt;b onmouseover=alert(3)&gt;x"));
        /* Written atomically: no temporary file is left beside it. */
        char *names = listing(p.dir);
        ck_assert_str_eq(names, "plan.results.jsonl prices.json report.html");
        free(names);
        free(html);
        page_free(&p);
}
END_TEST

START_TEST(the_browser_dom_holds_each_arm_with_its_numbers)
{
        struct page p;
        page_new(&p);
        struct proc_result r;
        browse(&r, &p, "--dump-dom");
        ck_assert_msg(r.status == 0 && strstr(r.out, "</html>"), "chromium --dump-dom: status %d, stderr %s", r.status,
                      r.err);
        /* The DOM has no element the results named: the names are text. */
        const char *planted[] = { strstr(r.out, "<script"), strstr(r.out, "<b onmouseover") };
        for (size_t i = 0; i < TB_ARRAY_SIZE(planted); i++)
                ck_assert_msg(!planted[i], "the DOM has an element the results planted: %.60s", planted[i]);
        char *text = dom_text(r.out);
        const char *const want[] = {
                "Pass rate per arm",
                /* A: 2 of 3, Wilson [0.2077, 0.9385]; the other 3 of 4, [0.3006, 0.9544] */
                "A", "0.667 ", " [0.208, 0.939] · 2/3 passed",
                "<script>alert(1)</script>", "0.750 ", " [0.301, 0.954] · 3/4 passed",
                /* per task: t1 +0.5, x -0.5: mean 0 over 2 tasks, the interval all of [-1, 1] */
                "+0.000, 95% interval [-1.000, +1.000], over 2 tasks",
                "\"><b onmouseover=alert(3)>x",
                "1/2", "2/2", "1/1",
                "Tokens and cost", "$0.0035",
        };
        for (size_t i = 0; i < TB_ARRAY_SIZE(want); i++)
                ck_assert_msg(strstr(text, want[i]), "the page's text has no '%s':\n%.3000s", want[i], text);
        free(text);
        proc_result_free(&r);
        page_free(&p);
}
END_TEST

START_TEST(the_browser_draws_the_page_not_a_blank)
{
        struct page p;
        page_new(&p);
        char *png = path_in(p.dir, "shot.png");
        char *shot = xasprintf("--screenshot=%s", png);
        struct proc_result r;
        browse(&r, &p, shot);
        ck_assert_msg(r.status == 0, "chromium --screenshot: status %d, stderr %s", r.status, r.err);
        proc_result_free(&r);
        /* The bars' blue (#4c78a8) and the grid's colours are drawn, among many colours. */
        run_argv(&r, NULL,
                 (char *[]){ "/usr/bin/python3", TESTS_SOURCE_DIR "/lib/png_colours.py", png, "76,120,168", "255,255,255",
                             NULL });
        ck_assert_msg(r.status == 0, "png_colours: %s %s", r.out, r.err);
        assert_line(r.out, "size 1000x1200");
        assert_line(r.out, "near 76,120,168 yes");
        unsigned distinct = 0;
        const char *d = strstr(r.out, "distinct ");
        ck_assert_msg(d && sscanf(d, "distinct %u", &distinct) == 1 && distinct >= 16, "%s", r.out);
        proc_result_free(&r);
        free(shot);
        free(png);
        page_free(&p);
}
END_TEST

int main(void)
{
        chromium = find_on_path("chromium", getenv("PATH") ? getenv("PATH") : TB_DEFAULT_PATH);
        if (!chromium || !host_can("command -v python3 >/dev/null")) {
                printf("report_html: no chromium (apt-get install chromium) or python3: skipped\n");
                return 77;
        }
        Suite *s = suite_create("report_html");
        TCase *tc = tb_tcase(s, "report_html", 120); /* a browser's start on a busy machine */
        tcase_add_test(tc, the_page_is_self_contained_and_escapes_every_name);
        tcase_add_test(tc, the_browser_dom_holds_each_arm_with_its_numbers);
        tcase_add_test(tc, the_browser_draws_the_page_not_a_blank);
        int r = run_suite(s);
        free(chromium);
        return r;
}
