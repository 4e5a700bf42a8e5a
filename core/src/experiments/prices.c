#include "experiments/prices.h"

#include <json-c/json.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/fileio.h"
#include "base/macro.h"

static const char *const price_kinds[] = { "input", "cached_input", "output", "reasoning", "cache_write_input" };

/* Where each kind goes in a struct price. */
static double *price_slot(struct price *p, size_t kind)
{
        switch (kind) {
        case 0: return &p->input;
        case 1: return &p->cached_input;
        case 2: return &p->output;
        case 3: return &p->reasoning;
        default: return &p->cache_write_input;
        }
}

static int price_kind(const char *key)
{
        for (size_t k = 0; k < TB_ARRAY_SIZE(price_kinds); k++)
                if (strcmp(key, price_kinds[k]) == 0)
                        return (int)k;
        return -1;
}

/* One model's object into `p`; -EINVAL with err naming the field. */
static int price_parse(struct price *p, const char *path, const char *model, json_object *o, struct tb_error *err)
{
        if (!json_object_is_type(o, json_type_object))
                return tb_fail(err, -EINVAL,
                               "prices '%s': field '%s': not an object of USD per million tokens "
                               "({\"input\": 1.25, \"output\": 10})",
                               path, model);
        bool seen[TB_ARRAY_SIZE(price_kinds)] = { false };
        json_object_object_foreach(o, key, v) {
                int k = price_kind(key);
                if (k < 0)
                        return tb_fail(err, -EINVAL,
                                       "prices '%s': field '%s.%s': unknown; the kinds are input, cached_input, "
                                       "cache_write_input, output and reasoning",
                                       path, model, key);
                double d = json_object_get_double(v);
                if (!(json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)) ||
                    !isfinite(d) || d < 0)
                        return tb_fail(err, -EINVAL,
                                       "prices '%s': field '%s.%s': not a number >= 0 (USD per million tokens)",
                                       path, model, key);
                *price_slot(p, (size_t)k) = d;
                seen[k] = true;
        }
        for (size_t k = 0; k <= 2; k += 2)
                if (!seen[k])
                        return tb_fail(err, -EINVAL,
                                       "prices '%s': field '%s.%s': missing; input and output are required",
                                       path, model, price_kinds[k]);
        if (!seen[1])
                p->cached_input = p->input;
        if (!seen[3])
                p->reasoning = p->output;
        if (!seen[4])
                p->cache_write_input = p->input;
        return 0;
}

static json_object *prices_parse_file(const char *path, struct tb_error *err)
{
        size_t len = 0;
        _cleanup_free_ char *text = read_file(path, 1 << 20, &len);
        if (!text) {
                tb_fail(err, -errno, "prices '%s': cannot read it: %s", path, strerror(errno));
                return NULL;
        }
        json_tokener *tok = json_tokener_new();
        json_object *j = json_tokener_parse_ex(tok, text, (int)len);
        enum json_tokener_error e = json_tokener_get_error(tok);
        size_t at = json_tokener_get_parse_end(tok);
        json_tokener_free(tok);
        if (e == json_tokener_success && j && at < len && strspn(text + at, " \t\r\n") != len - at)
                e = json_tokener_error_parse_unexpected;
        if (e != json_tokener_success || !j) {
                json_object_put(j);
                tb_fail(err, -EINVAL, "prices '%s': not JSON at byte %zu: %s", path, at,
                        e == json_tokener_continue ? "the file ends inside a value" : json_tokener_error_desc(e));
                return NULL;
        }
        if (!json_object_is_type(j, json_type_object)) {
                json_object_put(j);
                tb_fail(err, -EINVAL,
                        "prices '%s': not a JSON object of models ({\"gpt-5\": {\"input\": 1.25, \"output\": 10}})",
                        path);
                return NULL;
        }
        return j;
}

int prices_load(struct prices *out, const char *path, struct tb_error *err)
{
        *out = (struct prices){ 0 };
        json_object *j = prices_parse_file(path, err);
        if (!j)
                return err ? err->code : -EINVAL;
        struct prices t = { .p = xcalloc((size_t)json_object_object_length(j) + 1, sizeof(struct price)) };
        int r = 0;
        json_object_object_foreach(j, model, o) {
                t.p[t.n] = (struct price){ .model = xstrdup(model) };
                r = price_parse(&t.p[t.n], path, model, o, err);
                t.n++;
                if (r < 0)
                        break;
        }
        json_object_put(j);
        if (r < 0) {
                prices_done(&t);
                return r;
        }
        *out = t;
        return 0;
}

void prices_done(struct prices *p)
{
        for (size_t i = 0; i < p->n; i++)
                free(p->p[i].model);
        free(p->p);
        *p = (struct prices){ 0 };
}

const struct price *prices_find(const struct prices *p, const char *model)
{
        for (size_t i = 0; i < p->n; i++)
                if (strcmp(p->p[i].model, model) == 0)
                        return &p->p[i];
        return NULL;
}

static double at_least_zero(long long v) { return v > 0 ? (double)v : 0; }

double price_cost(const struct price *price, const struct token_counts *t)
{
        double usd = at_least_zero(t->input - t->cached_input - t->cache_write_input) * price->input +
                     at_least_zero(t->cached_input) * price->cached_input +
                     at_least_zero(t->cache_write_input) * price->cache_write_input +
                     at_least_zero(t->output - t->reasoning) * price->output +
                     at_least_zero(t->reasoning) * price->reasoning;
        return usd / 1e6;
}
