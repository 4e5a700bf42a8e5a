#include "gitguard/gitdata.h"

#include <string.h>

#include "base/macro.h"
#include "base/str.h"

static const char *const pseudo_refs[] = { "ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD",
                                           "REVERT_HEAD", "AUTO_MERGE", "BISECT_HEAD" };
static const char *const texts[] = { "COMMIT_EDITMSG", "MERGE_MSG", "SQUASH_MSG", "MERGE_MODE", "TAG_EDITMSG",
                                     "NOTES_EDITMSG" };

static bool in(const char *name, const char *const *list, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(name, list[i]) == 0)
                        return true;
        return false;
}

enum gitdata_kind gitdata_kind(const char *name, bool worktree)
{
        if (strcmp(name, "HEAD") == 0)
                return GITDATA_HEAD;
        if (strcmp(name, "index") == 0 || (!worktree && str_has_prefix(name, "sharedindex.")))
                return GITDATA_INDEX;
        if (strcmp(name, "logs") == 0)
                return GITDATA_LOGS;
        if (in(name, pseudo_refs, TB_ARRAY_SIZE(pseudo_refs)))
                return GITDATA_PSEUDO_REF;
        if (in(name, texts, TB_ARRAY_SIZE(texts)))
                return GITDATA_TEXT;
        if (worktree)
                return GITDATA_CONTROL;
        if (strcmp(name, "refs") == 0)
                return GITDATA_REFS;
        if (strcmp(name, "packed-refs") == 0)
                return GITDATA_PACKED_REFS;
        if (strcmp(name, "objects") == 0)
                return GITDATA_OBJECTS;
        if (strcmp(name, "modules") == 0)
                return GITDATA_MODULES;
        if (strcmp(name, "worktrees") == 0)
                return GITDATA_WORKTREES;
        return GITDATA_CONTROL;
}

static bool is_hex(const char *s, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

/* An object id at `s` (40 or 64 hex digits) followed by `end` chars or the
 * end: its length, or 0. */
static size_t oid_len(const char *s, size_t len)
{
        for (size_t n = 64; n >= 40; n -= 24)
                if (len >= n && is_hex(s, n) && (len == n || !is_hex(s + n, 1)))
                        return n;
        return 0;
}

bool gitdata_refname_valid(const char *name)
{
        size_t n = strlen(name);
        if (n == 0 || n > 1024 || !str_has_prefix(name, "refs/") || name[n - 1] == '/' || name[n - 1] == '.')
                return false;
        if (strstr(name, "..") || strstr(name, "@{") || strstr(name, "//"))
                return false;
        for (const char *c = name; *c; c++) {
                unsigned char u = (unsigned char)*c;
                if (u < 0x20 || u == 0x7f || strchr(" ~^:?*[\\", u))
                        return false;
        }
        for (const char *comp = name; comp && *comp;) {
                const char *slash = strchr(comp, '/');
                size_t k = slash ? (size_t)(slash - comp) : strlen(comp);
                if (k == 0 || comp[0] == '.' || (k >= 5 && strncmp(comp + k - 5, ".lock", 5) == 0))
                        return false;
                comp = slash ? slash + 1 : NULL;
        }
        return true;
}

bool gitdata_ref_value_valid(const char *s, size_t len)
{
        if (len < 2 || s[len - 1] != '\n' || memchr(s, '\0', len))
                return false;
        size_t body = len - 1;
        if (memchr(s, '\n', body))
                return false;
        if (str_has_prefix(s, "ref: ")) {
                char name[1100];
                size_t k = body - 5;
                if (k >= sizeof name)
                        return false;
                memcpy(name, s + 5, k);
                name[k] = '\0';
                return gitdata_refname_valid(name);
        }
        return oid_len(s, body) == body;
}

/* Each line of `s` (the last may lack its newline) to `fn`; false at the
 * first it refuses, or on a NUL byte. */
static bool each_line(const char *s, size_t len, bool (*fn)(const char *line, size_t n, void *ctx), void *ctx)
{
        if (memchr(s, '\0', len))
                return false;
        for (size_t at = 0; at < len;) {
                const char *nl = memchr(s + at, '\n', len - at);
                size_t n = nl ? (size_t)(nl - (s + at)) : len - at;
                if (!fn(s + at, n, ctx))
                        return false;
                at += n + 1;
        }
        return true;
}

struct packed_state {
        size_t line;
        bool after_ref;
};

static bool packed_line(const char *l, size_t n, void *ctx)
{
        struct packed_state *ps = ctx;
        bool first = ps->line++ == 0;
        if (first && n >= 17 && strncmp(l, "# pack-refs with:", 17) == 0) {
                for (size_t i = 0; i < n; i++)
                        if ((unsigned char)l[i] < 0x20)
                                return false;
                return true;
        }
        if (n > 0 && l[0] == '^') {
                bool ok = ps->after_ref && oid_len(l + 1, n - 1) == n - 1;
                ps->after_ref = false;
                return ok;
        }
        size_t k = oid_len(l, n);
        if (k == 0 || k + 1 >= n || l[k] != ' ' || n - k - 1 > 1024)
                return false;
        char name[1100];
        memcpy(name, l + k + 1, n - k - 1);
        name[n - k - 1] = '\0';
        ps->after_ref = true;
        return gitdata_refname_valid(name);
}

bool gitdata_packed_refs_valid(const char *s, size_t len)
{
        struct packed_state ps = { 0 };
        return each_line(s, len, packed_line, &ps);
}

static bool pseudo_line(const char *l, size_t n, void *ctx)
{
        (void)ctx;
        size_t k = oid_len(l, n);
        if (k == 0)
                return false;
        if (k < n && l[k] != '\t' && l[k] != ' ')
                return false;
        for (size_t i = k; i < n; i++)
                if ((unsigned char)l[i] < 0x20 && l[i] != '\t')
                        return false;
        return true;
}

bool gitdata_pseudo_ref_valid(const char *s, size_t len)
{
        return len > 0 && each_line(s, len, pseudo_line, NULL);
}

static bool has_suffix(const char *s, const char *suffix)
{
        size_t a = strlen(s), b = strlen(suffix);
        return a >= b && strcmp(s + a - b, suffix) == 0;
}

static bool pack_file(const char *name)
{
        static const char *const ext[] = { ".pack", ".idx", ".rev", ".keep", ".promisor", ".mtimes", ".bitmap" };
        if (!str_has_prefix(name, "pack-"))
                return false;
        const char *dot = strchr(name + 5, '.');
        if (!dot || (dot - (name + 5) != 40 && dot - (name + 5) != 64) || !is_hex(name + 5, (size_t)(dot - (name + 5))))
                return false;
        for (size_t i = 0; i < TB_ARRAY_SIZE(ext); i++)
                if (strcmp(dot, ext[i]) == 0)
                        return true;
        return false;
}

bool gitdata_object_name_valid(const char *parent, const char *name, bool is_dir)
{
        size_t n = strlen(name);
        if (!parent) {
                if (is_dir)
                        return (n == 2 && is_hex(name, 2)) || strcmp(name, "pack") == 0 || strcmp(name, "info") == 0;
                return strcmp(name, "multi-pack-index") == 0 ||
                       (str_has_prefix(name, "multi-pack-index-") &&
                        (has_suffix(name, ".bitmap") || has_suffix(name, ".rev")));
        }
        if (strlen(parent) == 2)
                return !is_dir && (n == 38 || n == 62) && is_hex(name, n);
        if (strcmp(parent, "pack") == 0)
                return !is_dir && pack_file(name);
        if (strcmp(parent, "info") == 0) {
                if (is_dir)
                        return strcmp(name, "commit-graphs") == 0;
                /* alternates and http-alternates are not data: they name
                 * other object stores (the guard keeps them as control). */
                return strcmp(name, "packs") == 0 || strcmp(name, "commit-graph") == 0;
        }
        if (strcmp(parent, "info/commit-graphs") == 0)
                return !is_dir && (strcmp(name, "commit-graph-chain") == 0 ||
                                   (str_has_prefix(name, "graph-") && has_suffix(name, ".graph")));
        return false;
}
