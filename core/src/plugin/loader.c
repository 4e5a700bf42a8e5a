#define _GNU_SOURCE
#include "plugin/loader.h"

#include "plugin/manifest.h"
#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/error.h"
#include "base/path.h"
#include "base/strbuf.h"
#include "base/strv.h"

#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#ifndef TB_PLUGIN_DIR
#error "TB_PLUGIN_DIR must be defined by the build"
#endif

void plugin_search_path(const char *plugin_path, struct strv *out)
{
        if (plugin_path) {
                _cleanup_free_ char *copy = xstrdup(plugin_path);
                char *save = NULL;
                for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save))
                        if (!strv_contains(out, d))
                                strv_add(out, d);
        }
        if (!strv_contains(out, TB_PLUGIN_DIR))
                strv_add(out, TB_PLUGIN_DIR);
}

bool plugin_name_valid(const char *name)
{
        size_t n = strlen(name);
        if (n == 0 || n > 64 || !((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= '0' && name[0] <= '9')))
                return false;
        return strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

/* A plugin is code trialbox runs: refuse one that someone else could have
 * replaced. The file and its folder must be owned by root or by us, and be
 * writable by neither group nor others. */
static int check_owner_mode(const struct stat *st, const char *what, const char *path, struct tb_error *err)
{
        if (st->st_uid != 0 && st->st_uid != geteuid())
                return tb_fail(err, -EPERM, "%s '%s' is owned by uid %u, neither root nor you; reinstall it", what,
                               path, (unsigned)st->st_uid);
        if (st->st_mode & (S_IWGRP | S_IWOTH))
                return tb_fail(err, -EPERM, "%s '%s' is writable by others (mode %04o); run: chmod go-w '%s'", what,
                               path, (unsigned)(st->st_mode & 07777), path);
        return 0;
}

/* Does every part of the ELF file the dynamic loader maps lie inside the
 * file? A truncated library passes the magic check, and dlopen would map
 * pages past its end and die of SIGBUS touching them. `head` holds the
 * file's first `n` bytes (the header, and in a library as linked, the
 * program headers right after it); a table past them is read whole. */
static bool elf_fits(int fd, off_t size, const unsigned char *head, size_t n)
{
        Elf64_Ehdr eh;
        if (n < sizeof eh)
                return false;
        memcpy(&eh, head, sizeof eh);
        if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 ||
            eh.e_phoff > (Elf64_Off)size || (Elf64_Off)size - eh.e_phoff < (Elf64_Off)eh.e_phnum * sizeof(Elf64_Phdr))
                return false;
        /* The section headers come last in a whole file: cut, it is truncated. */
        if (eh.e_shoff != 0 && (eh.e_shoff > (Elf64_Off)size ||
                                (Elf64_Off)size - eh.e_shoff < (Elf64_Off)eh.e_shnum * eh.e_shentsize))
                return false;
        const size_t table = (size_t)eh.e_phnum * sizeof(Elf64_Phdr);
        _cleanup_free_ unsigned char *read = NULL;
        const unsigned char *ph_at;
        if (eh.e_phoff <= n && n - eh.e_phoff >= table) {
                ph_at = head + eh.e_phoff;
        } else {
                read = xmalloc(table);
                if (pread(fd, read, table, (off_t)eh.e_phoff) != (ssize_t)table)
                        return false;
                ph_at = read;
        }
        for (unsigned i = 0; i < eh.e_phnum; i++) {
                Elf64_Phdr ph;
                memcpy(&ph, ph_at + i * sizeof ph, sizeof ph);
                if (ph.p_type == PT_LOAD &&
                    (ph.p_offset > (Elf64_Off)size || ph.p_filesz > (Elf64_Off)size - ph.p_offset))
                        return false;
        }
        return true;
}

/* The folder holding `path` must pass check_owner_mode too. */
static int check_folder(const char *path, struct tb_error *err)
{
        struct stat st;
        _cleanup_free_ char *dir = path_dirname(path);
        if (stat(dir, &st) < 0)
                return tb_fail(err, -errno, "plugin folder '%s': %s", dir, strerror(errno));
        return check_owner_mode(&st, "plugin folder", dir, err);
}

static bool has_suffix(const char *s, const char *suffix)
{
        size_t a = strlen(s), b = strlen(suffix);
        return a > b && strcmp(s + a - b, suffix) == 0;
}

/* What the core reads of a Harness: each hook and member only when the
 * plugin's size reaches it (a plugin built against an older minor has a
 * smaller struct; one built against a newer minor has more we ignore). */
#define REACHES(h, m) ((h)->size >= offsetof(struct tb_harness, m) + sizeof((h)->m))
static void plugin_take_harness(struct plugin *out, const struct tb_harness *h, const char *path)
{
        out->harness = h;
        out->path = xstrdup(path);
        out->preflight = REACHES(h, preflight) ? h->preflight : NULL;
        out->prepare_login = REACHES(h, prepare_login) ? h->prepare_login : NULL;
        out->env = REACHES(h, env) ? h->env : NULL;
        out->flags = REACHES(h, flags) ? h->flags : 0;
        out->endpoints = REACHES(h, endpoints) ? h->endpoints : NULL;
        out->exclusive = REACHES(h, exclusive) ? h->exclusive : NULL;
        out->tokens = REACHES(h, tokens) ? h->tokens : NULL;
}
#undef REACHES

bool plugin_needs_userns(const struct plugin *p) { return (p->flags & TB_HARNESS_NEEDS_USERNS) != 0; }

/* A manifest is trusted like a plugin: the same owner and mode rules. */
static int load_manifest(const char *path, const char *expected_name, struct plugin *out, struct tb_error *err)
{
        struct stat st;
        int r = check_folder(path, err);
        if (r < 0)
                return r;
        if (stat(path, &st) < 0)
                return tb_fail(err, -errno, "manifest '%s': %s", path, strerror(errno));
        if (!S_ISREG(st.st_mode))
                return tb_fail(err, -EINVAL, "manifest '%s' is not a regular file; remove it", path);
        r = check_owner_mode(&st, "manifest", path, err);
        if (r < 0)
                return r;
        struct manifest *m;
        r = manifest_load(path, expected_name, &m, err);
        if (r < 0)
                return r;
        out->manifest = m;
        plugin_take_harness(out, manifest_harness(m), path);
        return 0;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(void *, dlclose)

/* Is the struct a plugin exports one this core can use? Any minor of our
 * major is: the size decides what is read (plugin_take_harness). */
static int check_harness(const struct tb_harness *h, const char *path, const char *expected_name,
                         struct tb_error *err)
{
        uint32_t major = TB_PLUGIN_ABI_MAJOR_OF(h->abi_version), minor = TB_PLUGIN_ABI_MINOR_OF(h->abi_version);
        if (major != TB_PLUGIN_ABI_MAJOR)
                return tb_fail(err, -EPROTO,
                               "plugin '%s' speaks plugin ABI %u.%u, this trialbox speaks %u.%u; rebuild the plugin "
                               "against this trialbox",
                               path, major, minor, TB_PLUGIN_ABI_MAJOR, TB_PLUGIN_ABI_MINOR);
        if (h->size < offsetof(struct tb_harness, preflight))
                return tb_fail(err, -EPROTO, "plugin '%s' declares a size of %u bytes, too small for any harness",
                               path, h->size);
        if (!h->name || strcmp(h->name, expected_name) != 0)
                return tb_fail(err, -EINVAL, "plugin '%s' calls itself '%s', not '%s'; rename the file or fix its name",
                               path, h->name ? h->name : "(null)", expected_name);
        if (!h->default_binary || !h->default_binary[0])
                return tb_fail(err, -EINVAL, "plugin '%s' has no default binary; fix the plugin", path);
        if (h->size >= offsetof(struct tb_harness, exclusive) + sizeof h->exclusive && h->exclusive &&
            !harness_exclusive_valid(h->exclusive))
                return tb_fail(err, -EINVAL,
                               "plugin '%s' names an exclusive resource that is not 1 to 64 characters of "
                               "[a-z0-9._-]; fix the plugin",
                               path);
        return 0;
}

/* Open the file once, check it, and hand the dynamic loader that
 * descriptor, not the path again: the very file checked is the one loaded. */
static int open_library(const char *path, int *out_fd, struct tb_error *err)
{
        struct stat st;
        int r = check_folder(path, err);
        if (r < 0)
                return r;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return tb_fail(err, -errno, "plugin '%s': %s", path, strerror(errno));
        if (fstat(fd, &st) < 0)
                return tb_fail(err, -errno, "plugin '%s': %s", path, strerror(errno));
        if (!S_ISREG(st.st_mode))
                return tb_fail(err, -EINVAL, "plugin '%s' is not a regular file; remove it", path);
        r = check_owner_mode(&st, "plugin", path, err);
        if (r < 0)
                return r;
        /* The header and the program headers in one read. */
        unsigned char head[1024];
        ssize_t n = pread(fd, head, sizeof head, 0);
        if (n < 4 || memcmp(head, "\177ELF", 4) != 0)
                return tb_fail(err, -ENOEXEC, "plugin '%s' is not a loadable library (no ELF header); remove it",
                               path);
        if (!elf_fits(fd, st.st_size, head, (size_t)n))
                return tb_fail(err, -ENOEXEC,
                               "plugin '%s' is not a loadable library (truncated or not a 64-bit ELF); reinstall it",
                               path);
        *out_fd = TAKE_FD(fd);
        return 0;
}

int plugin_load_file(const char *path, const char *expected_name, struct plugin *out, struct tb_error *err)
{
        *out = (struct plugin){ 0 };
        if (has_suffix(path, ".json"))
                return load_manifest(path, expected_name, out, err);

        _cleanup_close_ int fd = -1;
        int r = open_library(path, &fd, err);
        if (r < 0)
                return r;
        char fdpath[64];
        snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", fd);
        _cleanup_(dlclosep) void *dl = dlopen(fdpath, RTLD_NOW | RTLD_LOCAL);
        if (!dl) {
                const char *why = dlerror();
                return tb_fail(err, -ENOEXEC, "plugin '%s' is not a loadable library: %s; rebuild or remove it", path,
                               why ? why : "unknown error");
        }
        dlerror();
        const struct tb_harness *h = dlsym(dl, TB_PLUGIN_SYMBOL);
        if (!h)
                return tb_fail(err, -ENOENT, "plugin '%s' does not export the symbol '%s'; is it a trialbox plugin?",
                               path, TB_PLUGIN_SYMBOL);
        /* Its messages read the plugin's own strings: checked before dlclose. */
        r = check_harness(h, path, expected_name, err);
        if (r < 0)
                return r;
        plugin_take_harness(out, h, path);
        out->dl = TAKE_PTR(dl);
        return 0;
}

void plugin_unload(struct plugin *p)
{
        if (p->dl)
                dlclose(p->dl);
        manifest_free(p->manifest);
        free(p->path);
        *p = (struct plugin){ 0 };
}

void plugin_list(const char *plugin_path, struct plugin_entry **out, size_t *n)
{
        struct strv dirs = { 0 };
        struct plugin_entry *v = NULL;
        size_t count = 0, cap = 0;

        plugin_search_path(plugin_path, &dirs);
        for (size_t i = 0; i < dirs.n; i++) {
                struct dirent **names = NULL;
                int k = scandir(dirs.v[i], &names, NULL, alphasort);
                for (int j = 0; j < k; j++) {
                        const char *f = names[j]->d_name;
                        bool so = has_suffix(f, ".so"), json = has_suffix(f, ".json");
                        if (f[0] != '.' && (so || json)) {
                                _cleanup_free_ char *name = strndup(f, strlen(f) - (so ? 3 : 5));
                                bool shadowed = false;
                                for (size_t m = 0; m < count; m++)
                                        shadowed = shadowed || strcmp(v[m].name, name) == 0;
                                GREEDY_REALLOC(v, cap, count + 1);
                                v[count++] = (struct plugin_entry){ TAKE_PTR(name),
                                                                    xasprintf("%s/%s", dirs.v[i], f), shadowed };
                        }
                        free(names[j]);
                }
                free(names);
        }
        strv_done(&dirs);
        *out = v;
        *n = count;
}

void plugin_list_free(struct plugin_entry *v, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(v[i].name);
                free(v[i].path);
        }
        free(v);
}

int plugin_load(const char *plugin_path, const char *name, struct plugin *out, struct tb_error *err)
{
        struct strv dirs = { 0 };
        plugin_search_path(plugin_path, &dirs);
        for (size_t i = 0; i < dirs.n; i++) {
                _cleanup_free_ char *so = xasprintf("%s/%s.so", dirs.v[i], name);
                _cleanup_free_ char *json = xasprintf("%s/%s.json", dirs.v[i], name);
                bool has_so = access(so, F_OK) == 0, has_json = access(json, F_OK) == 0;
                if (has_so && has_json) {
                        strv_done(&dirs);
                        return tb_fail(err, -EEXIST, "both '%s' and '%s' define harness '%s'; remove one", so, json,
                                       name);
                }
                if (has_so || has_json) {
                        strv_done(&dirs);
                        return plugin_load_file(has_so ? so : json, name, out, err);
                }
        }

        struct strv names = { 0 };
        struct plugin_entry *v;
        size_t n;
        plugin_list(plugin_path, &v, &n);
        for (size_t i = 0; i < n; i++)
                if (!v[i].shadowed)
                        strv_add(&names, v[i].name);
        plugin_list_free(v, n);

        struct strbuf installed = { 0 }, looked = { 0 };
        for (size_t i = 0; i < names.n; i++)
                strbuf_addf(&installed, "%s%s", i ? ", " : "", names.v[i]);
        for (size_t i = 0; i < dirs.n; i++)
                strbuf_addf(&looked, "%s'%s'", i ? ", " : "", dirs.v[i]);
        tb_fail(err, -ENOENT, "no plugin for harness '%s' (looked in %s); installed harnesses: %s", name, looked.s,
                installed.s ? installed.s : "none");
        free(installed.s);
        free(looked.s);
        strv_done(&names);
        strv_done(&dirs);
        return -ENOENT;
}
