/* A main() for the fuzz targets without libFuzzer (systemd's src/fuzz/fuzz-main.c):
 *
 *   fuzz_X-replay CORPUS_DIR_OR_FILE...
 *
 * calls LLVMFuzzerTestOneInput once on every regular file named or found in
 * the folders named (not recursively, in name order), so the seed corpora
 * and any crash inputs saved under them are replayed as an ordinary test by
 * any compiler. A target's broken promise aborts, which fails the test; an
 * unreadable input or an empty corpus fails it too (a replay that ran
 * nothing could not fail). LLVMFuzzerInitialize is called first when the
 * target defines it. Messages go to fd 2 (a target may point the stdio
 * streams elsewhere). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

/* The whole of `path` in a buffer of exactly its size (so ASan sees a
 * read past its end), or -1 with errno set. */
static int read_input(int dirfd, const char *path, uint8_t **data, size_t *size)
{
        int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        struct stat st;
        if (fd < 0)
                return -1;
        int r = fstat(fd, &st);
        if (r < 0 || !S_ISREG(st.st_mode)) {
                int e = r < 0 ? errno : EINVAL; /* not a regular file */
                close(fd);
                errno = e;
                return -1;
        }
        size_t n = (size_t)st.st_size, got = 0;
        uint8_t *buf = malloc(n ? n : 1);
        while (buf && got < n) {
                ssize_t k = read(fd, buf + got, n - got);
                if (k <= 0)
                        break;
                got += (size_t)k;
        }
        close(fd);
        if (!buf || got != n) {
                free(buf);
                errno = buf ? EIO : ENOMEM;
                return -1;
        }
        *data = buf;
        *size = n;
        return 0;
}

/* Replay one input; 0, or -1 after saying why it could not be read. */
static int replay(int dirfd, const char *shown, const char *name)
{
        uint8_t *data;
        size_t size;
        if (read_input(dirfd, name, &data, &size) < 0) {
                dprintf(STDERR_FILENO, "fuzz replay: reading '%s': %s\n", shown, strerror(errno));
                return -1;
        }
        dprintf(STDERR_FILENO, "fuzz replay: %s (%zu bytes)\n", shown, size);
        LLVMFuzzerTestOneInput(data, size);
        free(data);
        return 0;
}

static int only_files(const struct dirent *e) { return e->d_name[0] != '.'; }

/* Replay every file in the folder `dir`; the number replayed, or -1. */
static long replay_dir(const char *dir)
{
        int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct dirent **names;
        int n = dirfd < 0 ? -1 : scandir(dir, &names, only_files, alphasort);
        if (n < 0) {
                dprintf(STDERR_FILENO, "fuzz replay: reading the folder '%s': %s\n", dir, strerror(errno));
                if (dirfd >= 0)
                        close(dirfd);
                return -1;
        }
        long done = 0;
        for (int i = 0; i < n; i++) {
                char shown[4096];
                snprintf(shown, sizeof shown, "%s/%s", dir, names[i]->d_name);
                if (done >= 0)
                        done = replay(dirfd, shown, names[i]->d_name) < 0 ? -1 : done + 1;
                free(names[i]);
        }
        free(names);
        close(dirfd);
        return done;
}

int main(int argc, char **argv)
{
        if (argc < 2) {
                dprintf(STDERR_FILENO, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
                return 2;
        }
        if (LLVMFuzzerInitialize)
                LLVMFuzzerInitialize(&argc, &argv);
        long total = 0;
        for (int i = 1; i < argc; i++) {
                struct stat st;
                long n;
                if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
                        n = replay_dir(argv[i]);
                else
                        n = replay(AT_FDCWD, argv[i], argv[i]) < 0 ? -1 : 1;
                if (n < 0)
                        return 1;
                total += n;
        }
        if (total == 0) {
                dprintf(STDERR_FILENO, "fuzz replay: no input in the corpus given; a replay of nothing tests nothing\n");
                return 1;
        }
        dprintf(STDERR_FILENO, "fuzz replay: %ld inputs, all passed\n", total);
        return 0;
}
