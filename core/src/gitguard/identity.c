#define _GNU_SOURCE
#include "gitguard/identity.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/error.h"
#include "base/fileio.h"
#include "base/macro.h"
#include "base/path.h"
#include "base/strbuf.h"
#include "gitguard/gitconfig.h"
#include "gitguard/hostgit.h"

/* The host's user.name and user.email from its global config files, read
 * here when gitconfig.c can: 0, or -EOPNOTSUPP for git to read them. */
static int identity_from_files(const char *host_home, char **name, char **email)
{
        const char *const *files = host_git_global_files;
        _cleanup_close_ int home_fd = open(host_home, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (home_fd < 0)
                return errno == ENOENT || errno == ENOTDIR ? 0 : -EOPNOTSUPP;
        for (size_t i = 0; i < TB_ARRAY_SIZE(host_git_global_files); i++) {
                /* Links followed, as git does (dotfiles are often links);
                 * never blocking on a FIFO. */
                size_t len = 0;
                _cleanup_free_ char *text = NULL;
                int r = read_full_file_at(home_fd, files[i], 1u << 20, READ_REGULAR | READ_NONBLOCK, &text, &len, NULL);
                if (r == -ENOENT || r == -ENOTDIR)
                        continue;
                if (r < 0 || gitconfig_identity(text, len, name, email) < 0)
                        return -EOPNOTSUPP;
        }
        return 0;
}

/* The host's user.name and user.email from its global config, each NULL when
 * unset or not one printable line: read from the files when gitconfig.c
 * can, else by one run of git. */
static void host_git_identity(const char *git, const char *host_home, char **name, char **email)
{
        char buf[4096];
        *name = *email = NULL;
        if (identity_from_files(host_home, name, email) == 0)
                return;
        free(*name);
        free(*email);
        *name = *email = NULL;
        size_t len;
        if (!host_git_run(git, host_home,
                     (const char *const[]){ "config", "--global", "--includes", "-z", "--get-regexp",
                                            "^user\\.(name|email)$",
                                            NULL },
                     buf, sizeof buf, &len))
                return;
        /* -z: "key\nvalue\0" for each, in the order git read them. */
        for (char *rec = buf; rec < buf + len;) {
                char *end = memchr(rec, '\0', (size_t)(buf + len - rec));
                if (!end)
                        break;
                char *nl = memchr(rec, '\n', (size_t)(end - rec));
                if (nl) {
                        *nl = '\0';
                        char **to = strcmp(rec, "user.name") == 0 ? name : strcmp(rec, "user.email") == 0 ? email : NULL;
                        if (to)
                                gitconfig_identity_take(to, nl + 1, (size_t)(end - nl - 1));
                }
                rec = end + 1;
        }
}

/* `value` as a git config value: quoted, '\' and '"' escaped. */
static void add_config_value(struct strbuf *sb, const char *value)
{
        strbuf_add(sb, "\"");
        for (const char *p = value; *p; p++) {
                char c[3] = { *p, 0, 0 };
                if (*p == '\\' || *p == '"') {
                        c[0] = '\\';
                        c[1] = *p;
                }
                strbuf_add(sb, c);
        }
        strbuf_add(sb, "\"\n");
}

int git_identity_write(const char *path, const char *host_home, const char *session_home,
                              struct tb_error *err)
{
        _cleanup_free_ char *git = find_on_path("git", path);
        if (!git || !host_home)
                return 0;
        _cleanup_free_ char *name = NULL, *email = NULL;
        host_git_identity(git, host_home, &name, &email);
        if (!name && !email)
                return 0;
        struct strbuf sb = { 0 };
        strbuf_add(&sb, "# The host user's git identity, given by trialbox (nothing else of the host's git config).\n"
                        "[user]\n");
        if (name) {
                strbuf_add(&sb, "\tname = ");
                add_config_value(&sb, name);
        }
        if (email) {
                strbuf_add(&sb, "\temail = ");
                add_config_value(&sb, email);
        }
        _cleanup_close_ int home_fd = open(session_home, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int r = home_fd < 0 ? -errno : write_file_atomic_at(home_fd, ".gitconfig", sb.s, sb.len, 0600, 0);
        free(sb.s);
        if (r < 0)
                return tb_fail(err, r, "cannot write the git identity to '%s/.gitconfig': %s", session_home,
                               strerror(-r));
        return 0;
}
