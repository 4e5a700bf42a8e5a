#define _GNU_SOURCE
#include "sandbox/secret_places.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/fileio.h"
#include "base/macro.h"
#include "base/path.h"
#include "base/strv.h"

enum secret_base { BASE_HOME, BASE_CONFIG, BASE_DATA, BASE_STATE, BASE_CARGO };

struct secret_place {
        const char *rel;
        enum secret_base base;
        bool if_token; /* secret only when the file names a `token` */
};

/* The one list. A row is a path under one of the bases; keep it to places
 * that hold keys, tokens or logins, never a tool a session needs. */
static const struct secret_place places[] = {
        /* Keys and keyrings. */
        { ".ssh", BASE_HOME, false },
        { ".gnupg", BASE_HOME, false },
        { ".password-store", BASE_HOME, false },
        { "keyrings", BASE_DATA, false },
        /* Cloud, cluster and container logins. */
        { ".aws", BASE_HOME, false },
        { ".azure", BASE_HOME, false },
        { "gcloud", BASE_CONFIG, false },
        { ".kube", BASE_HOME, false },
        { ".docker/config.json", BASE_HOME, false },
        { ".vault-token", BASE_HOME, false },
        /* Git, package registries and forges. */
        { ".netrc", BASE_HOME, false },
        { ".git-credentials", BASE_HOME, false },
        { "git/credentials", BASE_CONFIG, false },
        { "gh", BASE_CONFIG, false },
        { ".npmrc", BASE_HOME, false },
        { ".pypirc", BASE_HOME, false },
        { "credentials", BASE_CARGO, false },
        { "credentials.toml", BASE_CARGO, false },
        { "config", BASE_CARGO, true },
        { "config.toml", BASE_CARGO, true },
        /* Harnesses' logins (a Trial gets its own in its fresh home). */
        { ".codex", BASE_HOME, false },
        { ".claude", BASE_HOME, false },
        { ".claude.json", BASE_HOME, false },
        { "muse", BASE_CONFIG, false },
        { ".gemini", BASE_HOME, false },
        { "opencode", BASE_CONFIG, false },
        { "opencode", BASE_DATA, false },
        { ".grok", BASE_HOME, false },
        /* trialbox's own: the Trials homes and the Credentials. */
        { "trialbox", BASE_STATE, false },
        { "trialbox/credentials.json", BASE_CONFIG, false },
};

static const char *const base_default[] = {
        [BASE_HOME] = "", [BASE_CONFIG] = ".config", [BASE_DATA] = ".local/share",
        [BASE_STATE] = ".local/state", [BASE_CARGO] = ".cargo",
};

static const char *base_override(const struct secret_homes *h, enum secret_base b)
{
        const char *v = b == BASE_CONFIG ? h->config_home
                        : b == BASE_DATA ? h->data_home
                        : b == BASE_STATE ? h->state_home
                        : b == BASE_CARGO ? h->cargo_home
                                          : NULL;
        return v && v[0] == '/' ? v : NULL;
}

static void add_unique(struct strv *out, char *p)
{
        if (strv_contains(out, p))
                free(p);
        else
                strv_add_take(out, p);
}

/* The place's paths: under the base's default in the home, and under its
 * override when that is elsewhere. */
static void place_paths(const struct secret_homes *h, const struct secret_place *pl, struct strv *out)
{
        const char *over = base_override(h, pl->base);
        _cleanup_free_ char *def = NULL;
        if (h->home && h->home[0] == '/')
                def = pl->base == BASE_HOME ? xstrdup(h->home) : path_join(h->home, base_default[pl->base]);
        if (def)
                add_unique(out, path_join(def, pl->rel));
        if (over && (!def || strcmp(over, def) != 0))
                add_unique(out, path_join(over, pl->rel));
}

static void add_extra(const struct secret_homes *h, struct strv *out)
{
        if (!h->extra)
                return;
        _cleanup_free_ char *copy = xstrdup(h->extra);
        char *save = NULL;
        for (char *w = strtok_r(copy, ":", &save); w; w = strtok_r(NULL, ":", &save)) {
                if (w[0] == '/')
                        add_unique(out, xstrdup(w));
                else if (h->home && h->home[0] == '/')
                        add_unique(out, path_join(h->home, w));
        }
}

/* A folder holding this many places or more is listed rather than asked
 * of once per place (a readlink(2) each; a listing is 5 calls: an open, a
 * check that the folder can be searched, two getdents(2) and a close). */
#define PRIME_MIN_PLACES 10

/* Each folder that holds many of `paths` (the home) listed once for
 * h->memo (path_memo_list): those not there then cost no readlink(2) each. */
static void prime(const struct secret_homes *h, const struct strv *paths)
{
        if (!h->memo)
                return;
        /* Each folder (a place's path up to its last '/') and how many
         * places it holds: few folders, counted without a copy. */
        struct folder {
                const char *at;
                size_t len, n;
        } dirs[32];
        size_t n_dirs = 0;
        for (size_t i = 0; i < paths->n; i++) {
                const char *p = paths->v[i], *slash = strrchr(p, '/');
                if (!slash || slash == p)
                        continue;
                const size_t len = (size_t)(slash - p);
                size_t k = 0;
                while (k < n_dirs && (dirs[k].len != len || memcmp(dirs[k].at, p, len) != 0))
                        k++;
                if (k == n_dirs) {
                        if (n_dirs == TB_ARRAY_SIZE(dirs))
                                continue;
                        dirs[n_dirs++] = (struct folder){ p, len, 0 };
                }
                if (++dirs[k].n == PRIME_MIN_PLACES) {
                        _cleanup_free_ char *dir = strndup(p, len);
                        if (dir)
                                path_memo_list(h->memo, dir);
                }
        }
}

void secret_places_list(const struct secret_homes *h, struct strv *out)
{
        for (size_t i = 0; i < TB_ARRAY_SIZE(places); i++)
                place_paths(h, &places[i], out);
        add_extra(h, out);
        prime(h, out);
}

bool secret_file_has_token(const char *path)
{
        enum { MAX = 1 << 20 };
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        /* Anything but a regular file of at most MAX bytes, read whole: secret. */
        if (read_full_file_at(AT_FDCWD, path, MAX, READ_NOFOLLOW | READ_REGULAR | READ_NONBLOCK, &buf, &len, NULL) < 0)
                return true;
        /* `token` and `[registry] token`, `token-from-stdout`: whatever the
         * key, the word marks the file. A NUL would hide the rest: secret. */
        return strlen(buf) != len || strcasestr(buf, "token") != NULL;
}

/* An existing place, as its real path. */
struct mask {
        char *real;
        bool dir;
};

static bool is_token_row(const struct secret_homes *h, const char *path)
{
        for (size_t i = 0; i < TB_ARRAY_SIZE(places); i++) {
                if (!places[i].if_token)
                        continue;
                struct strv ps = { 0 };
                place_paths(h, &places[i], &ps);
                bool hit = strv_contains(&ps, path);
                strv_done(&ps);
                if (hit)
                        return true;
        }
        return false;
}

/* The places that exist and are secret now, none inside another. */
static size_t existing_masks(const struct secret_homes *h, struct mask **out)
{
        struct strv paths = { 0 };
        struct mask *m = NULL;
        size_t n = 0;

        secret_places_list(h, &paths);
        m = xmalloc((paths.n ? paths.n : 1) * sizeof *m);
        for (size_t i = 0; i < paths.n; i++) {
                char *real = path_memo_realpath(h->memo, paths.v[i]);
                struct stat st;
                if (!real || strcmp(real, "/") == 0 || stat(real, &st) < 0 ||
                    (is_token_row(h, paths.v[i]) && !secret_file_has_token(real))) {
                        free(real);
                        continue;
                }
                m[n++] = (struct mask){ real, S_ISDIR(st.st_mode) };
        }
        strv_done(&paths);
        /* A place inside another masked place is hidden with it. */
        for (size_t i = 0; i < n;) {
                bool inner = false;
                for (size_t j = 0; j < n && !inner; j++)
                        inner = j != i && path_is_under(m[i].real, m[j].real) &&
                                (strcmp(m[i].real, m[j].real) != 0 || j < i);
                if (inner) {
                        free(m[i].real);
                        m[i] = m[--n];
                } else {
                        i++;
                }
        }
        *out = m;
        return n;
}

/* Where the host path `real` appears in the sandbox through `op`, when the
 * op binds a folder that contains it (not the place itself: a bind of
 * exactly a place is a plugin's deliberate choice). malloc'd, or NULL. */
static char *seen_through(const struct sandbox_op *op, const char *real)
{
        if ((op->kind != SANDBOX_RO_BIND && op->kind != SANDBOX_BIND) || !path_is_under(real, op->src) ||
            strcmp(real, op->src) == 0)
                return NULL;
        const char *rest = strcmp(op->src, "/") == 0 ? real : real + strlen(op->src);
        return strcmp(op->dest, "/") == 0 ? xstrdup(rest) : xasprintf("%s%s", op->dest, rest);
}

void secret_places_mask(struct sandbox_spec *spec, const struct secret_homes *h)
{
        struct mask *m = NULL;
        size_t n = existing_masks(h, &m);

        /* From the last op down, so an insert never moves an op not yet seen. */
        for (size_t i = spec->n_ops; n && i-- > 0;) {
                for (size_t k = 0; k < n; k++) {
                        _cleanup_free_ char *dest = seen_through(&spec->ops[i], m[k].real);
                        if (!dest)
                                continue;
                        if (m[k].dir)
                                sandbox_insert(spec, i + 1, SANDBOX_TMPFS, NULL, dest);
                        else
                                sandbox_insert(spec, i + 1, SANDBOX_RO_BIND, "/dev/null", dest);
                }
        }
        for (size_t k = 0; k < n; k++)
                free(m[k].real);
        free(m);
}
