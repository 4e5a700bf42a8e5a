/* `trialbox credentials`: its command line; the value of `set` read from
 * stdin (echo off at a terminal); then logins/credentials.h. */
#define _GNU_SOURCE
#include "logins/credentials.h"

#include <ctype.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "base/env.h"
#include "base/log.h"
#include "cmd/cli.h"
#include "cmd/exit.h"
#include "cmd/options.h"

struct credentials_args {
        const char *path;
};

static const struct cli_option credentials_options[] = {
        { .kind = CLI_STRING, .name = "credentials", .metavar = "FILE", .flags = CLI_NONEMPTY,
          .needs = "a file", .offset = offsetof(struct credentials_args, path),
          .help = "this file instead of the default one" },
        { .kind = CLI_HELP, .name = "help", .short_name = 'h' },
};

static const struct cli_status credentials_statuses[] = {
        { "0", "done" },
        { "1", "the file cannot be read or written, or unset's KEY is not in it" },
        { "2", "a usage error: a bad KEY or value; nothing written" },
};

const struct cli_usage cmd_credentials_usage = {
        .synopsis = "trialbox credentials [--credentials FILE] set KEY | unset KEY | list",
        .description =
                "Manages the Credentials file: $XDG_CONFIG_HOME/trialbox/credentials.json, by\n"
                "default ~/.config/trialbox/credentials.json, or FILE.\n"
                "KEY is SECTION.KEY, e.g. claude.setup_token or opencode.api_key: the section\n"
                "is a Harness's name (a-z, 0-9, _ and -), the key A-Z, a-z, 0-9, _ and -.\n"
                "\n"
                "  set KEY     store the value read from stdin (one trailing newline is\n"
                "              dropped); at a terminal it is asked for, without echo.\n"
                "              Never give a secret as an argument.\n"
                "  unset KEY   remove KEY (a section left empty goes too)\n"
                "  list        print the names (SECTION.KEY), one a line; never the values\n"
                "\n"
                "The file is written atomically with mode 0600.\n",
        .options = credentials_options,
        .n_options = TB_ARRAY_SIZE(credentials_options),
        .statuses = credentials_statuses,
        .n_statuses = TB_ARRAY_SIZE(credentials_statuses),
};

#define usage_error(...) cli_usage_error("credentials", __VA_ARGS__)

/* Why an action failed: `err`, and whether the input was at fault (a usage
 * error, exit 2) or anything else (exit 1). */
struct creds_failure {
        struct tb_error err;
        bool usage;
};

static int usage_fail(struct creds_failure *f, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int usage_fail(struct creds_failure *f, int code, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(f->err.msg, sizeof f->err.msg, fmt, ap);
        va_end(ap);
        f->err.code = code;
        f->usage = true;
        return code;
}

/* ---- reading the value ---- */

/* The terminal's settings while echo is off, for the signal handler. */
static struct termios saved_tty;
static volatile sig_atomic_t tty_changed;
/* Not SIGTSTP: stopped, the shell takes the terminal back with its own settings. */
static const int tty_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

static void restore_tty_and_reraise(int sig)
{
        if (tty_changed)
                tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tty);
        signal(sig, SIG_DFL);
        raise(sig);
}

/* Echo off (and a prompt) when stdin is a terminal, so the secret is never on screen. */
static bool tty_echo_off(const char *name, struct sigaction *old)
{
        struct termios t;
        if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved_tty) < 0)
                return false;
        struct sigaction sa = { .sa_handler = restore_tty_and_reraise };
        sigemptyset(&sa.sa_mask);
        for (size_t i = 0; i < TB_ARRAY_SIZE(tty_signals); i++)
                sigaction(tty_signals[i], &sa, &old[i]);
        t = saved_tty;
        t.c_lflag &= ~(tcflag_t)(ECHO | ECHOE | ECHOK | ECHONL);
        t.c_lflag |= ICANON;
        if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &t) < 0) {
                for (size_t i = 0; i < TB_ARRAY_SIZE(tty_signals); i++)
                        sigaction(tty_signals[i], &old[i], NULL);
                return false;
        }
        tty_changed = 1;
        fprintf(stderr, "value for %s (not echoed): ", name);
        fflush(stderr);
        return true;
}

static void tty_restore(const struct sigaction *old)
{
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tty);
        tty_changed = 0;
        for (size_t i = 0; i < TB_ARRAY_SIZE(tty_signals); i++)
                sigaction(tty_signals[i], &old[i], NULL);
        fputc('\n', stderr);
}

/* Read the value from stdin into *out (release with erase_and_free()),
 * with one trailing "\n" or "\r\n" dropped. 0, or a negative errno with `f`
 * saying why. */
static int read_value(const char *name, char **out, size_t *out_len, struct creds_failure *f)
{
        struct sigaction old[TB_ARRAY_SIZE(tty_signals)];
        bool tty = tty_echo_off(name, old);
        /* One buffer of the largest size, never grown (no stray copies). */
        size_t cap = CREDENTIALS_MAX_SIZE + 1, n = 0;
        _cleanup_erase_ char *buf = xmalloc(cap + 1);
        int e = 0;

        while (n < cap) {
                ssize_t r = read(STDIN_FILENO, buf + n, cap - n);
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        e = errno;
                        break;
                }
                if (r == 0)
                        break;
                n += (size_t)r;
                /* At a terminal the value is one line. */
                if (tty && buf[n - 1] == '\n')
                        break;
        }
        if (tty)
                tty_restore(old);

        if (e)
                return tb_fail(&f->err, -e, "cannot read the value from stdin: %s", strerror(e));
        if (n > CREDENTIALS_MAX_SIZE)
                return usage_fail(f, -EFBIG, "the value on stdin is larger than 1 MiB");
        if (n > 0 && buf[n - 1] == '\n') {
                n--;
                if (n > 0 && buf[n - 1] == '\r')
                        n--;
        }
        if (n == 0)
                return usage_fail(f, -ENODATA,
                                  "the value on stdin is empty; pipe the secret in, e.g. "
                                  "'trialbox credentials set %s < FILE'",
                                  name);
        if (memchr(buf, '\0', n))
                return usage_fail(f, -EINVAL, "the value on stdin contains a NUL byte; a credential must be text");
        buf[n] = '\0';
        *out = steal_pointer(&buf);
        *out_len = n;
        return 0;
}

/* ---- the subcommands ---- */

static int creds_set(const char *path, const char *dotted, const char *section, const char *key,
                   struct creds_failure *f)
{
        _cleanup_credentials_ struct credentials *c = NULL;
        _cleanup_erase_ char *value = NULL;
        size_t len = 0;

        /* A broken file is reported before anyone types a secret. */
        int r = credentials_load(path, &c, &f->err);
        if (r < 0)
                return r;
        r = read_value(dotted, &value, &len, f);
        if (r < 0)
                return r;
        r = credentials_set(c, section, key, value);
        erase_and_free(steal_pointer(&value));
        if (r < 0)
                /* The names were checked already: only the value can be wrong here. */
                return usage_fail(f, r, "the value on stdin is not UTF-8 text");
        r = credentials_save(c, path, &f->err);
        if (r < 0)
                return r;
        log_notice("saved '%s' in credentials '%s'", dotted, path);
        return 0;
}

static int creds_unset(const char *path, const char *dotted, const char *section, const char *key,
                     struct creds_failure *f)
{
        _cleanup_credentials_ struct credentials *c = NULL;

        int r = credentials_load(path, &c, &f->err);
        if (r < 0)
                return r;
        r = credentials_unset(c, section, key);
        if (r < 0)
                return tb_fail(&f->err, r, "'%s' is not in credentials '%s'; see 'trialbox credentials list'", dotted,
                               path);
        r = credentials_save(c, path, &f->err);
        if (r < 0)
                return r;
        log_notice("removed '%s' from credentials '%s'", dotted, path);
        return 0;
}

static int creds_list(const char *path, struct creds_failure *f)
{
        _cleanup_credentials_ struct credentials *c = NULL;
        _cleanup_strv_ struct strv names = { 0 };

        int r = credentials_load(path, &c, &f->err);
        if (r < 0)
                return r;
        if (credentials_loose_mode(c))
                log_warn(CREDENTIALS_LOOSE_WARNING, path, path);
        credentials_names(c, &names);
        for (size_t i = 0; i < names.n; i++)
                puts(names.v[i]);
        if (fflush(stdout) != 0 || ferror(stdout))
                return tb_fail(&f->err, errno > 0 ? -errno : -EIO, "cannot write the list to stdout: %s",
                               strerror(errno));
        return 0;
}

/* How an invalid KEY is named in its message. A short one of plain
 * characters is a mistyped name: quoted, so the user sees what was wrong.
 * Anything else may be a secret given where the KEY belongs, or carry control
 * characters: only its length and first few characters are shown. */
#define KEY_SHOWN_MAX 16
static char *key_shown(const char *key)
{
        size_t n = strlen(key);
        bool plain = n <= KEY_SHOWN_MAX;
        for (const char *p = key; plain && *p; p++)
                plain = isascii((unsigned char)*p) && isprint((unsigned char)*p) && *p != '\'';
        if (plain)
                return xasprintf("'%s'", key);
        return xasprintf("a KEY of %zu characters starting '%.4s...'", n, key);
}

/* The action and its KEY, from the arguments left after the options. Extra
 * arguments are counted, never quoted back: one may be a secret given by
 * mistake. 0, or TB_EXIT_USAGE (said). */
enum creds_action { CREDS_SET, CREDS_UNSET, CREDS_LIST };
static int parse_action(char **args, int n, enum creds_action *action)
{
        if (n == 0)
                return usage_error("'credentials' needs a command: set KEY, unset KEY or list");
        const char *cmd = args[0];
        bool is_set = strcmp(cmd, "set") == 0, is_unset = strcmp(cmd, "unset") == 0;
        if (!is_set && !is_unset && strcmp(cmd, "list") != 0)
                return usage_error("unknown credentials command '%s' (set, unset or list)", cmd);
        if (!is_set && !is_unset && n > 1)
                return usage_error("'list' takes no arguments");
        if ((is_set || is_unset) && n < 2)
                return usage_error("'%s' needs a KEY such as claude.setup_token", cmd);
        if (is_set && n > 2)
                return usage_error("'set' takes only a KEY: the value is read from stdin, never from the "
                                   "command line");
        if (is_unset && n > 2)
                return usage_error("'unset' takes only a KEY");
        *action = is_set ? CREDS_SET : is_unset ? CREDS_UNSET : CREDS_LIST;
        return 0;
}

/* The usage error of a KEY that is not SECTION.KEY. */
static int bad_key(const char *dotted)
{
        _cleanup_free_ char *shown = key_shown(dotted);
        return usage_error("%s is not a valid KEY: use SECTION.KEY with a section of a-z, 0-9, '_' and '-' and a key "
                           "of A-Z, a-z, 0-9, '_' and '-', e.g. claude.setup_token",
                           shown);
}

/* The action on the file at `path` (`path` NULL: the default one); `dotted`
 * (split into `section` and `key`) is set's and unset's KEY. */
static int run_action(const struct tb_env *env, const char *path, enum creds_action action, const char *dotted,
                      const char *section, const char *key)
{
        _cleanup_free_ char *default_path = NULL;
        if (!path && credentials_default_path(env, &default_path) < 0)
                return cli_fail(CLI_EXIT_FAILED, "cannot find the credentials file: neither XDG_CONFIG_HOME nor "
                                                 "HOME is set; give --credentials FILE");
        path = path ? path : default_path;

        struct creds_failure f = { 0 };
        int r = action == CREDS_SET     ? creds_set(path, dotted, section, key, &f)
                : action == CREDS_UNSET ? creds_unset(path, dotted, section, key, &f)
                                        : creds_list(path, &f);
        if (r >= 0)
                return CLI_EXIT_OK;
        return f.usage ? usage_error("%s", f.err.msg) : cli_fail(CLI_EXIT_FAILED, "%s", f.err.msg);
}

int credentials_main(const struct tb_env *env, int argc, char **argv, const char *path_override)
{
        const struct cli_command *self = cli_command_find("credentials");
        struct credentials_args a = { .path = path_override };
        enum creds_action action = CREDS_LIST;
        int first = 0, r = cli_parse(self, argc, argv, &a, &first);
        if (r != 0)
                return r == CLI_HELP_SHOWN ? 0 : r;
        r = parse_action(argv + first, argc - first, &action);
        if (r != 0)
                return r;
        if (action == CREDS_LIST)
                return run_action(env, a.path, action, NULL, NULL, NULL);
        _cleanup_free_ char *section = NULL, *key = NULL;
        if (credentials_parse_key(argv[first + 1], &section, &key) < 0)
                return bad_key(argv[first + 1]);
        return run_action(env, a.path, action, argv[first + 1], section, key);
}

int cmd_credentials(const struct cli_command *self, const struct tb_env *env, int argc, char **argv)
{
        (void)self;
        return credentials_main(env, argc, argv, NULL);
}
