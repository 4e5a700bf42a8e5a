#define _GNU_SOURCE
#include "sandbox/toolchain.h"

#include "sandbox/secret_places.h"
#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/macro.h"
#include "base/path.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static bool is_dir(const char *p)
{
        struct stat st;
        return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

void toolchain_add_system(struct sandbox_spec *spec, const char *resolv_conf)
{
        static const char *const merged[] = { "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32" };
        struct stat st;

        if (is_dir("/usr"))
                sandbox_add(spec, SANDBOX_RO_BIND, "/usr", "/usr");
        for (size_t i = 0; i < TB_ARRAY_SIZE(merged); i++) {
                /* Mostly links (a merged /usr): read first, one call each. */
                char target[PATH_MAX];
                ssize_t n = readlink(merged[i], target, sizeof target - 1);
                if (n > 0) {
                        target[n] = '\0';
                        sandbox_add(spec, SANDBOX_SYMLINK, target, merged[i]);
                } else if (n < 0 && errno == EINVAL && lstat(merged[i], &st) == 0 && S_ISDIR(st.st_mode)) {
                        sandbox_add(spec, SANDBOX_RO_BIND, merged[i], merged[i]);
                }
        }
        if (is_dir("/etc"))
                sandbox_add(spec, SANDBOX_RO_BIND, "/etc", "/etc");
        /* A linked resolv.conf (systemd-resolved, NetworkManager) points
         * outside /etc: without its target, DNS breaks in the sandbox. */
        if (lstat(resolv_conf, &st) == 0 && S_ISLNK(st.st_mode)) {
                _cleanup_free_ char *target = realpath(resolv_conf, NULL);
                if (target && !sandbox_covers(spec, target))
                        sandbox_add(spec, SANDBOX_RO_BIND, target, target);
        }
        /* /proc/sys is covered by confine_spec, when no user namespace protects it. */
        sandbox_add(spec, SANDBOX_PROC, NULL, "/proc");
        sandbox_add(spec, SANDBOX_DEV, NULL, "/dev");
        sandbox_add(spec, SANDBOX_TMPFS, NULL, "/tmp");
}

char *toolchain_home_of(const char *resolved)
{
        _cleanup_free_ char *dir = path_dirname(resolved);
        const char *base = strrchr(dir, '/');
        if (base && strcmp(base, "/bin") == 0 && base != dir)
                return path_dirname(dir);
        return TAKE_PTR(dir);
}

/* A read-only folder (or file) the session needs: `src` is its real path,
 * `dest` where the session looks for it (they differ when a PATH entry is a
 * link). With `link`, `dest` becomes a link to `src` instead: a tool on
 * PATH that is a link into its package. */
struct ro_dir {
        char *src, *dest;
        bool link;
};

struct ro_dirs {
        struct ro_dir *v;
        size_t n, cap;
        struct path_memo *memo; /* the pass's (toolchain_host), or NULL */
        bool cargo_added;       /* add_cargo ran (cargo and rustc share the Cargo home) */
};

/* Add `dest` when it is a folder, or with `file_ok` a regular file. */
static void ro_paths_add(struct ro_dirs *d, const char *dest, bool file_ok)
{
        char *src = path_memo_realpath(d->memo, dest);
        struct stat st;
        if (!src || stat(src, &st) < 0 || !(S_ISDIR(st.st_mode) || (file_ok && S_ISREG(st.st_mode))) ||
            strcmp(src, "/") == 0) {
                free(src);
                return;
        }
        for (size_t i = 0; i < d->n; i++)
                if (strcmp(d->v[i].dest, dest) == 0) {
                        free(src);
                        return;
                }
        GREEDY_REALLOC(d->v, d->cap, d->n + 1);
        d->v[d->n++] = (struct ro_dir){ src, xstrdup(dest), false };
}

static void ro_dirs_add(struct ro_dirs *d, const char *dest) { ro_paths_add(d, dest, false); }

/* Is `p` inside a folder `d` binds already (a version manager's)? */
static bool ro_dirs_cover(const struct ro_dirs *d, const char *p)
{
        for (size_t i = 0; i < d->n; i++)
                if (!d->v[i].link && (path_is_under(p, d->v[i].dest) || path_is_under(p, d->v[i].src)))
                        return true;
        return false;
}

/* Make `dest` a link to `target` in the sandbox. */
static void ro_link_add(struct ro_dirs *d, const char *target, const char *dest)
{
        for (size_t i = 0; i < d->n; i++)
                if (strcmp(d->v[i].dest, dest) == 0)
                        return;
        GREEDY_REALLOC(d->v, d->cap, d->n + 1);
        d->v[d->n++] = (struct ro_dir){ xstrdup(target), xstrdup(dest), true };
}

static int ro_dir_cmp(const void *a, const void *b)
{
        const struct ro_dir *x = a, *y = b;
        size_t lx = strlen(x->dest), ly = strlen(y->dest);
        return lx < ly ? -1 : lx > ly ? 1 : strcmp(x->dest, y->dest);
}

/* Does `dest` reach `src` in the sandbox already: is `src` bound onto itself
 * and `dest` under a link the sandbox has too (/bin -> usr/bin)? */
static bool reached_through_link(const struct sandbox_spec *spec, const char *src, const char *dest)
{
        if (!sandbox_covers(spec, src))
                return false;
        _cleanup_free_ char *prefix = xstrdup(dest);
        for (char *slash = prefix + 1;; slash++) {
                slash = strchr(slash, '/');
                if (slash)
                        *slash = '\0';
                const struct sandbox_op *op = sandbox_find(spec, prefix);
                if (op && op->kind == SANDBOX_SYMLINK)
                        return true;
                if (!slash)
                        return false;
                *slash = '/';
        }
}

/* Bind the folders shortest first, skipping any already visible as itself
 * (a link inside a folder bound whole is there already). */
static void ro_dirs_apply(struct ro_dirs *d, struct sandbox_spec *spec)
{
        if (d->n == 0)
                return;
        tb_qsort(d->v, d->n, sizeof *d->v, ro_dir_cmp);
        for (size_t i = 0; i < d->n; i++) {
                const struct ro_dir *r = &d->v[i];
                if (r->link && !sandbox_covers(spec, r->dest) && !sandbox_find(spec, r->dest))
                        sandbox_add(spec, SANDBOX_SYMLINK, r->src, r->dest);
                else if (!r->link && !sandbox_covers(spec, r->dest) && !reached_through_link(spec, r->src, r->dest))
                        sandbox_add(spec, SANDBOX_RO_BIND, r->src, r->dest);
                free(d->v[i].src);
                free(d->v[i].dest);
        }
        free(d->v);
        *d = (struct ro_dirs){ 0 };
}

static char *home_path(const struct toolchain_host *host, const char *override, const char *rel)
{
        if (override && override[0] == '/')
                return xstrdup(override);
        return host->home ? path_join(host->home, rel) : NULL;
}

/* Is `p` the user's home or a folder above it (or "/")? Such a folder is
 * never bound: it holds everything of the user. */
static bool holds_home(const struct toolchain_host *host, const char *p)
{
        if (strcmp(p, "/") == 0)
                return true;
        if (!host->home || host->home[0] != '/')
                return false;
        _cleanup_free_ char *real = path_memo_realpath(host->memo, host->home);
        return path_is_under(host->home, p) || (real && path_is_under(real, p));
}

/* Is `p` too broad to be a tool's home: the home, a folder above it, a
 * top-level folder of it (~/.local, ~/.config, ~/bin) or an XDG base
 * folder (~/.local/share)? Those hold far more than one tool. */
bool toolchain_too_broad(const struct toolchain_host *host, const char *p)
{
        if (holds_home(host, p))
                return true;
        if (!host->home || host->home[0] != '/' || strcmp(host->home, "/") == 0)
                return false;
        _cleanup_free_ char *parent = path_dirname(p);
        _cleanup_free_ char *real = path_memo_realpath(host->memo, host->home);
        if (strcmp(parent, host->home) == 0 || (real && strcmp(parent, real) == 0))
                return true;
        const char *const xdg[] = { ".local/share", ".local/state", host->config_home, host->data_home,
                                    host->state_home };
        for (size_t i = 0; i < TB_ARRAY_SIZE(xdg); i++) {
                /* The first two are the defaults, under the home; the rest count when absolute. */
                if (!xdg[i] || (i >= 2 && xdg[i][0] != '/'))
                        continue;
                _cleanup_free_ char *x = i >= 2 ? xstrdup(xdg[i]) : path_join(host->home, xdg[i]);
                _cleanup_free_ char *xr = path_memo_realpath(host->memo, x);
                if (strcmp(p, x) == 0 || (xr && strcmp(p, xr) == 0))
                        return true;
        }
        return false;
}

/* The home of the tool whose real path is `real`, or when that is too
 * broad (~/bin/tool, ~/.local/bin/tool), the tool's own file. */
static void add_tool_home(struct ro_dirs *dirs, const struct toolchain_host *host, const char *real)
{
        _cleanup_free_ char *home = toolchain_home_of(real);
        if (toolchain_too_broad(host, home))
                ro_paths_add(dirs, real, true);
        else
                ro_dirs_add(dirs, home);
}

/* A version manager's own folder (~/.rustup, ~/.pyenv): bound whole, the
 * secret places in it masked later; never the home itself. */
static void add_manager_dir(struct ro_dirs *dirs, const struct toolchain_host *host, const char *dir)
{
        _cleanup_free_ char *real = path_memo_realpath(host->memo, dir);
        if (real && !holds_home(host, real) && !holds_home(host, dir))
                ro_dirs_add(dirs, dir);
}

/* A rustup install: of the Cargo home, the binaries, the download caches and
 * a config without registry tokens ([source] replacements) — never the
 * credentials; the rustup home (toolchains) whole. */
static void add_cargo(struct ro_dirs *dirs, struct sandbox_spec *spec, const struct toolchain_host *host,
                      const char *cargo)
{
        static const char *const dirs_in[] = { "bin", "registry", "git" };
        static const char *const configs[] = { "config", "config.toml" };
        for (size_t i = 0; i < TB_ARRAY_SIZE(dirs_in); i++) {
                _cleanup_free_ char *p = path_join(cargo, dirs_in[i]);
                add_manager_dir(dirs, host, p);
        }
        for (size_t i = 0; i < TB_ARRAY_SIZE(configs); i++) {
                _cleanup_free_ char *p = path_join(cargo, configs[i]);
                _cleanup_free_ char *real = path_memo_realpath(host->memo, p);
                if (real && !secret_file_has_token(real))
                        ro_paths_add(dirs, p, true);
        }
        sandbox_setenv(spec, "CARGO_HOME", cargo, false);
        _cleanup_free_ char *rustup = home_path(host, host->rustup_home, ".rustup");
        if (rustup && is_dir(rustup)) {
                add_manager_dir(dirs, host, rustup);
                sandbox_setenv(spec, "RUSTUP_HOME", rustup, false);
        }
}

/* The tool at `found` (as found on PATH): bind its home, and what its version
 * manager keeps in the real home. */
static void add_tool(struct ro_dirs *dirs, struct sandbox_spec *spec, const struct toolchain_host *host,
                     const char *found)
{
        _cleanup_free_ char *real = path_memo_realpath(host->memo, found);
        if (!real)
                return;
        _cleanup_free_ char *cargo = home_path(host, host->cargo_home, ".cargo");
        if (cargo && (path_is_under(found, cargo) || path_is_under(real, cargo))) {
                if (!dirs->cargo_added)
                        add_cargo(dirs, spec, host, cargo);
                dirs->cargo_added = true;
                return;
        }
        add_tool_home(dirs, host, real);
        _cleanup_free_ char *pyenv = home_path(host, host->pyenv_root, ".pyenv");
        if (pyenv && (path_is_under(found, pyenv) || path_is_under(real, pyenv))) {
                add_manager_dir(dirs, host, pyenv);
                sandbox_setenv(spec, "PYENV_ROOT", pyenv, false);
        }
}

/* Call `fn` for each word of `list` once: a word said again (a folder
 * twice on PATH) was seen to already. */
static void for_each_word(const char *list, const char *seps, void (*fn)(const char *w, void *ud), void *ud)
{
        if (!list)
                return;
        _cleanup_free_ char *copy = xstrdup(list);
        _cleanup_strv_ struct strv seen = { 0 };
        char *save = NULL;
        for (char *w = strtok_r(copy, seps, &save); w; w = strtok_r(NULL, seps, &save)) {
                if (strv_contains(&seen, w))
                        continue;
                strv_add(&seen, w);
                fn(w, ud);
        }
}

struct tools_ctx {
        struct ro_dirs *dirs;
        struct sandbox_spec *spec;
        const struct toolchain_host *host;
        struct strv secrets;   /* the secret places that exist, as real paths */
        struct strv home_dirs; /* the PATH folders inside the home, as real paths */
};

static struct secret_homes secret_homes_of(const struct toolchain_host *host)
{
        return (struct secret_homes){
                .home = host->home,
                .config_home = host->config_home,
                .data_home = host->data_home,
                .state_home = host->state_home,
                .cargo_home = host->cargo_home,
                .extra = host->secret_places,
                .memo = host->memo,
        };
}

static bool under_any(const struct strv *dirs, const char *p)
{
        for (size_t i = 0; i < dirs->n; i++)
                if (path_is_under(p, dirs->v[i]))
                        return true;
        return false;
}

static bool holds_any(const struct strv *dirs, const char *p)
{
        for (size_t i = 0; i < dirs->n; i++)
                if (path_is_under(dirs->v[i], p))
                        return true;
        return false;
}

/* Is the real path `real` inside the user's home? */
static bool in_home(const struct toolchain_host *host, const char *real)
{
        if (!host->home || host->home[0] != '/' || strcmp(host->home, "/") == 0)
                return false;
        _cleanup_free_ char *home = path_memo_realpath(host->memo, host->home);
        return path_is_under(real, host->home) || (home && path_is_under(real, home));
}

static bool has_file(const char *dir, const char *name)
{
        _cleanup_free_ char *p = path_join(dir, name);
        struct stat st;
        return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* May `root` be bound whole for a tool that links into it? Never the home,
 * a folder above it, a top-level folder of it or an XDG base; never in a
 * secret place; never a folder holding a PATH folder of the home, whose
 * other files would show (but for npm's tree, whose .bin holds its links). */
static bool package_ok(const struct tools_ctx *c, const char *root, bool npm_tree)
{
        return !toolchain_too_broad(c->host, root) && !under_any(&c->secrets, root) &&
               (npm_tree || !holds_any(&c->home_dirs, root));
}

/* The nearest folder up from the file `real` that marks a package root: a
 * venv's (pyvenv.cfg) or a package.json's; NULL when none is found below a
 * folder too broad to bind. */
static char *marked_root(const struct toolchain_host *host, const char *real)
{
        _cleanup_free_ char *dir = path_dirname(real);
        for (int depth = 0; depth < 32 && !toolchain_too_broad(host, dir); depth++) {
                if (has_file(dir, "pyvenv.cfg") || has_file(dir, "package.json"))
                        return steal_pointer(&dir);
                char *up = path_dirname(dir);
                free(dir);
                dir = up;
        }
        return NULL;
}

/* The package a tool on PATH links into (its real path `real`), bound
 * read-only so that the tool runs: for a file in an npm tree, the
 * outermost node_modules (the package and the dependencies npm put beside
 * it, where node looks them up); else the nearest folder up holding
 * pyvenv.cfg (a venv: pipx's) or package.json; else the file's own
 * folder. The first of these package_ok() accepts; none: the file alone. */
static void add_package(struct tools_ctx *c, const char *real)
{
        const char *nm = strstr(real, "/node_modules/");
        char *roots[] = { nm ? xasprintf("%.*s", (int)(nm - real + strlen("/node_modules")), real) : NULL,
                          marked_root(c->host, real), path_dirname(real) };
        bool done = false;
        for (size_t i = 0; i < TB_ARRAY_SIZE(roots); i++) {
                if (!done && roots[i] && package_ok(c, roots[i], i == 0)) {
                        ro_dirs_add(c->dirs, roots[i]);
                        done = true;
                }
                free(roots[i]);
        }
        if (!done)
                ro_paths_add(c->dirs, real, true);
}

/* The real path of the entry `p` when the session may run it (a regular
 * file with an execute bit, or a link to one) and it is in no secret
 * place; else NULL. */
static char *runnable(const struct tools_ctx *c, const char *p)
{
        char *real = path_memo_realpath(c->host->memo, p);
        struct stat st;
        if (real && stat(real, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111) && !under_any(&c->secrets, real))
                return real;
        free(real);
        return NULL;
}

/* Call `fn` for each entry of the folder `dir` but "." and "..", with its
 * path under `dir` and whether it is a link. */
static void for_each_entry(struct tools_ctx *c, const char *dir, void (*fn)(struct tools_ctx *c, const char *p, bool link))
{
        _cleanup_closedir_ DIR *d = opendir(dir);
        struct dirent *e;
        while (d && (e = readdir(d))) {
                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                        continue;
                _cleanup_free_ char *p = path_join(dir, e->d_name);
                struct stat st;
                bool link = e->d_type == DT_LNK || (e->d_type == DT_UNKNOWN && lstat(p, &st) == 0 && S_ISLNK(st.st_mode));
                fn(c, p, link);
        }
}

/* An entry of a PATH folder inside the home: bound on its own when the
 * session may run it (a link as a link, its package bound). */
static void add_home_tool(struct tools_ctx *c, const char *p, bool link)
{
        _cleanup_free_ char *real = runnable(c, p);
        if (!real)
                return;
        if (!link) {
                ro_paths_add(c->dirs, p, true);
                return;
        }
        ro_link_add(c->dirs, real, p);
        add_package(c, real);
}

/* An entry of a PATH folder bound whole: a link to a tool elsewhere brings
 * the tool's package, or it would dangle. */
static void add_linked_package(struct tools_ctx *c, const char *p, bool link)
{
        _cleanup_free_ char *real = link ? runnable(c, p) : NULL;
        if (real)
                add_package(c, real);
}

/* A PATH folder is bound as itself, never its parent; the home and the
 * folders above it never (a tool there is bound alone when named). One
 * inside the home is not bound whole: only what the session may run in it,
 * each entry on its own (~/.local/bin/deploy-token stays out). A link to a
 * tool elsewhere (npm's node_modules/.bin, pipx's ~/.local/bin) brings the
 * tool's package. A folder bound already (/usr/bin, a version manager's
 * ~/.cargo/bin) is not looked into. */
static void add_path_entry(const char *w, void *ud)
{
        struct tools_ctx *c = ud;
        if (w[0] != '/' || holds_home(c->host, w))
                return;
        _cleanup_free_ char *real = path_memo_realpath(c->host->memo, w);
        struct stat st;
        if (!real || holds_home(c->host, real) || stat(real, &st) < 0 || !S_ISDIR(st.st_mode) ||
            under_any(&c->secrets, real) || sandbox_covers(c->spec, real) || ro_dirs_cover(c->dirs, real))
                return;
        if (in_home(c->host, w) || in_home(c->host, real)) {
                for_each_entry(c, w, add_home_tool);
                return;
        }
        ro_dirs_add(c->dirs, w);
        for_each_entry(c, w, add_linked_package);
}

/* The PATH folders inside the home, known before any package is chosen. */
static void note_home_dir(const char *w, void *ud)
{
        struct tools_ctx *c = ud;
        _cleanup_free_ char *real = w[0] == '/' ? path_memo_realpath(c->host->memo, w) : NULL;
        if (real && (in_home(c->host, w) || in_home(c->host, real)) && !strv_contains(&c->home_dirs, real))
                strv_add(&c->home_dirs, real);
}

/* The secret places that exist, as real paths: nothing in them is bound for a tool. */
static void note_secrets(struct tools_ctx *c)
{
        const struct secret_homes h = secret_homes_of(c->host);
        _cleanup_strv_ struct strv all = { 0 };
        secret_places_list(&h, &all);
        for (size_t i = 0; i < all.n; i++) {
                char *real = path_memo_realpath(c->host->memo, all.v[i]);
                if (real && strcmp(real, "/") != 0)
                        strv_add_take(&c->secrets, real);
                else
                        free(real);
        }
}

static void add_named_tool(const char *w, void *ud)
{
        struct tools_ctx *c = ud;
        _cleanup_free_ char *found = find_on_path(w, c->host->path);
        if (found)
                add_tool(c->dirs, c->spec, c->host, found);
}

void toolchain_add_tools(struct sandbox_spec *spec, const struct toolchain_host *host)
{
        struct ro_dirs dirs = { .memo = host->memo };
        struct tools_ctx c = { &dirs, spec, host, { 0 }, { 0 } };

        note_secrets(&c);
        for_each_word(host->path, ":", note_home_dir, &c);
        /* The tools first: a PATH folder their version manager's folder holds is not looked into. */
        for_each_word(TOOLCHAIN_DEFAULT_TOOLS, ":", add_named_tool, &c);
        for_each_word(host->tools, ": \t", add_named_tool, &c);
        for_each_word(host->path, ":", add_path_entry, &c);
        ro_dirs_apply(&dirs, spec);
        strv_done(&c.secrets);
        strv_done(&c.home_dirs);
}

/* The program a script's first line asks for: "/bin/sh" for "#!/bin/sh -e",
 * "node" for "#!/usr/bin/env node" or "#!/usr/bin/env -S node --flag". */
static char *shebang_program(const char *script, bool *via_env)
{
        char line[512];
        _cleanup_close_ int fd = open(script, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        ssize_t n = read(fd, line, sizeof line - 1);
        if (n < 2 || line[0] != '#' || line[1] != '!')
                return NULL;
        line[n] = '\0';
        line[strcspn(line, "\n")] = '\0';
        char *save = NULL, *interp = strtok_r(line + 2, " \t", &save);
        if (!interp)
                return NULL;
        *via_env = false;
        const char *base = strrchr(interp, '/');
        if (base && strcmp(base + 1, "env") == 0) {
                for (char *w = strtok_r(NULL, " \t", &save); w; w = strtok_r(NULL, " \t", &save))
                        if (w[0] != '-' && !strchr(w, '=')) {
                                *via_env = true;
                                return xstrdup(w);
                        }
                return NULL;
        }
        return xstrdup(interp);
}

static bool path_list_has(const char *list, const char *dir)
{
        size_t n = strlen(dir);
        for (const char *p = list; p && *p;) {
                const char *end = strchrnul(p, ':');
                if ((size_t)(end - p) == n && strncmp(p, dir, n) == 0)
                        return true;
                p = *end ? end + 1 : end;
        }
        return false;
}

static void add_interpreter(struct sandbox_spec *spec, const char *bin, const char *real,
                            const struct toolchain_host *host)
{
        bool via_env = false;
        _cleanup_free_ char *prog = shebang_program(real, &via_env);
        if (!prog)
                return;
        struct ro_dirs dirs = { .memo = host->memo };
        if (!via_env) {
                _cleanup_free_ char *found = path_memo_realpath(host->memo, prog);
                if (found)
                        add_tool_home(&dirs, host, found);
                ro_dirs_apply(&dirs, spec);
                return;
        }
        /* nvm and npm put the launcher next to its node: prefer that one. */
        _cleanup_free_ char *bin_dir = path_dirname(bin);
        _cleanup_free_ char *beside = find_on_path(prog, bin_dir);
        _cleanup_free_ char *found = beside ? xstrdup(beside) : find_on_path(prog, host->path);
        if (!found)
                return;
        add_tool(&dirs, spec, host, found);
        ro_dirs_apply(&dirs, spec);
        _cleanup_free_ char *found_dir = path_dirname(found);
        const char *path = sandbox_getenv(spec, "PATH");
        if (!path_list_has(path, found_dir)) {
                _cleanup_free_ char *np = path && *path ? xasprintf("%s:%s", found_dir, path) : xstrdup(found_dir);
                sandbox_setenv(spec, "PATH", np, false);
                if (!sandbox_covers(spec, found_dir)) {
                        _cleanup_free_ char *real_dir = path_memo_realpath(host->memo, found_dir);
                        _cleanup_free_ char *found_real = path_memo_realpath(host->memo, found);
                        if (real_dir && !holds_home(host, real_dir) && !holds_home(host, found_dir))
                                sandbox_add(spec, SANDBOX_RO_BIND, real_dir, found_dir);
                        else if (found_real && !sandbox_covers(spec, found))
                                sandbox_add(spec, SANDBOX_RO_BIND, found_real, found);
                }
        }
}

char *toolchain_add_harness(struct sandbox_spec *spec, const char *name, const char *bin,
                            const struct toolchain_host *host)
{
        _cleanup_free_ char *real = path_memo_realpath(host->memo, bin);
        char *dest = sandbox_harness_path(name);
        if (!real)
                real = xstrdup(bin);

        char *nm = strstr(real, "/node_modules/");
        if (nm) {
                /* The whole tree from the outermost node_modules: the package
                 * and the dependencies npm put beside it. */
                char *tree = xstrdup(real);
                tree[(size_t)(nm - real) + strlen("/node_modules")] = '\0';
                if (!sandbox_covers(spec, tree))
                        sandbox_add(spec, SANDBOX_RO_BIND, tree, tree);
                free(tree);
                sandbox_add(spec, SANDBOX_SYMLINK, real, dest);
        } else {
                sandbox_add(spec, SANDBOX_RO_BIND, real, dest);
        }
        add_interpreter(spec, bin, real, host);
        return dest;
}

void toolchain_mask_secrets(struct sandbox_spec *spec, const struct toolchain_host *host)
{
        const struct secret_homes h = secret_homes_of(host);
        secret_places_mask(spec, &h);
}
