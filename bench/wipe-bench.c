/* Driver for bench/wipe.sh: the Grok Trials-home wipe (trials_home_wipe, in
 * core/src/logins/trials_home.c) on a tree made beforehand, for timing against rm -rf.
 *
 *   wipe-bench make DIR N   make DIR holding auth.json, .lock and N files of
 *                           64 bytes, 100 per subfolder (DIR/dNNNNN/fNN)
 *   wipe-bench wipe DIR     wipe DIR as a Grok Trial does: all but auth.json and .lock
 *   wipe-bench count DIR    print the number of entries left under DIR
 *
 * Built with -DTRIALBOX_BENCH=ON (bench/CMakeLists.txt), linked with the
 * core's logins/ and base/ libraries; bench/wipe.sh builds it when missing.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "logins/trials_home.h"
#include "base/error.h"

static int put(int dfd, const char *name)
{
        static const char data[64] = "{\"bench\": \"a file of a Grok session, 64 bytes long\"}          \n";
        int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0 || write(fd, data, sizeof data) != (ssize_t)sizeof data) {
                perror(name);
                return -1;
        }
        return close(fd);
}

static int make(const char *dir, long n)
{
        if (mkdir(dir, 0700) < 0) {
                perror(dir);
                return 1;
        }
        int top = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (top < 0 || put(top, "auth.json") < 0 || put(top, ".lock") < 0)
                return 1;
        for (long i = 0; i < n; i += 100) {
                char sub[32], name[32];
                snprintf(sub, sizeof sub, "d%05ld", i / 100);
                if (mkdirat(top, sub, 0700) < 0) {
                        perror(sub);
                        return 1;
                }
                int d = openat(top, sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (d < 0)
                        return 1;
                for (long j = i; j < n && j < i + 100; j++) {
                        snprintf(name, sizeof name, "f%02ld", j - i);
                        if (put(d, name) < 0)
                                return 1;
                }
                close(d);
        }
        close(top);
        return 0;
}

static long count(int dfd)
{
        DIR *d = fdopendir(dfd);
        long n = 0;
        struct dirent *e;
        if (!d)
                return -1;
        while ((e = readdir(d))) {
                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                        continue;
                n++;
                if (e->d_type == DT_DIR) {
                        int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub >= 0)
                                n += count(sub);
                }
        }
        closedir(d);
        return n;
}

int main(int argc, char **argv)
{
        if (argc == 4 && strcmp(argv[1], "make") == 0)
                return make(argv[2], atol(argv[3]));
        if (argc == 3 && strcmp(argv[1], "wipe") == 0) {
                static const char *const keep[] = { "auth.json", ".lock", NULL };
                struct tb_error err = { 0 };
                if (trials_home_wipe(argv[2], keep, &err) < 0) {
                        fprintf(stderr, "wipe-bench: %s\n", err.msg);
                        return 1;
                }
                return 0;
        }
        if (argc == 3 && strcmp(argv[1], "count") == 0) {
                int fd = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                printf("%ld\n", fd < 0 ? -1L : count(fd));
                return 0;
        }
        fprintf(stderr, "usage: wipe-bench make DIR N | wipe DIR | count DIR\n");
        return 2;
}
