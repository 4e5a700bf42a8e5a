/* Run by the build: compile the seccomp filter's rules (confine_rules.c)
 * with libseccomp, both programs, and write them as C source with the key
 * they were made under (sandbox/confine_bpf.h):
 *
 *   confine_bpf_gen OUT.c        the programs of this system
 *   confine_bpf_gen --none OUT.c none (a cross build: the filter is always
 *                                compiled at run time)
 *
 * OUT.c is written whole or not at all (a temporary file, renamed). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/confine_rules.h"

/* The program for `nested`, malloc'd into *prog: 0, or -1 with a message. */
static int compile(bool nested, unsigned char **prog, size_t *len)
{
        int fd = memfd_create("confine-bpf-gen", MFD_CLOEXEC);
        const char *step = "creating a memfd";
        int r = fd < 0 ? -errno : confine_rules_export(nested, CONFINE_TREE, fd, &step);
        struct stat st;
        if (r == 0 && fstat(fd, &st) < 0)
                r = -errno;
        if (r == 0) {
                *len = (size_t)st.st_size;
                *prog = malloc(*len ? *len : 1);
                if (!*prog || pread(fd, *prog, *len, 0) != (ssize_t)*len)
                        r = -EIO;
        }
        if (fd >= 0)
                close(fd);
        if (r < 0)
                fprintf(stderr, "confine_bpf_gen: %s: %s\n", step, strerror(-r));
        return r < 0 ? -1 : 0;
}

static void put_bytes(FILE *f, const char *name, const unsigned char *p, size_t n)
{
        fprintf(f, "static const unsigned char %s[] = {", name);
        for (size_t i = 0; i < n; i++)
                fprintf(f, "%s0x%02x,", i % 12 ? " " : "\n\t", p[i]);
        fprintf(f, "%s};\n", n ? "\n" : " 0 ");
}

int main(int argc, char **argv)
{
        bool none = argc == 3 && strcmp(argv[1], "--none") == 0;
        if (argc != 2 && !none) {
                fprintf(stderr, "usage: confine_bpf_gen [--none] OUT.c\n");
                return 2;
        }
        const char *out = argv[argc - 1];
        struct confine_bpf_key key = { 0 };
        unsigned char *prog[2] = { NULL, NULL };
        size_t len[2] = { 0, 0 };
        if (!none) {
                confine_rules_key(&key);
                if (compile(false, &prog[0], &len[0]) < 0 || compile(true, &prog[1], &len[1]) < 0)
                        return 1;
        }
        char *tmp;
        if (asprintf(&tmp, "%s.tmp", out) < 0)
                return 1;
        FILE *f = fopen(tmp, "w");
        if (!f) {
                fprintf(stderr, "confine_bpf_gen: cannot write '%s': %s\n", tmp, strerror(errno));
                return 1;
        }
        fprintf(f, "/* Made by confine_bpf_gen when trialbox was built: do not edit. */\n"
                   "#include \"sandbox/confine_bpf.h\"\n\n");
        put_bytes(f, "plain", prog[0], len[0]);
        put_bytes(f, "nested", prog[1], len[1]);
        fprintf(f,
                "\nconst struct confine_bpf confine_bpf_built = {\n"
                "\t.key = { .arch = 0x%08xu, .lib = { %uu, %uu, %uu } },\n"
                "\t.prog = { plain, nested },\n"
                "\t.len = { %zuu, %zuu },\n"
                "};\n",
                key.arch, key.lib[0], key.lib[1], key.lib[2], len[0], len[1]);
        if (fclose(f) != 0 || rename(tmp, out) < 0) {
                fprintf(stderr, "confine_bpf_gen: cannot write '%s': %s\n", out, strerror(errno));
                unlink(tmp);
                return 1;
        }
        free(tmp);
        free(prog[0]);
        free(prog[1]);
        return 0;
}
