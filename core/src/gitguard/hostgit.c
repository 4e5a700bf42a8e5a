#define _GNU_SOURCE
#include "gitguard/hostgit.h"

#include <string.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/path.h"
#include "base/spawn.h"
#include "base/strv.h"

const char *const host_git_global_files[2] = { ".config/git/config", ".gitconfig" };

bool host_git_run(const char *git, const char *home, const char *const args[], char *out, size_t cap, size_t *len_out)
{
        struct strv argv = { 0 };
        strv_add(&argv, git);
        for (size_t i = 0; args[i]; i++)
                strv_add(&argv, args[i]);
        _cleanup_free_ char *home_env = xasprintf("HOME=%s", home ? home : "/nonexistent");
        char *const envp[] = { home_env, "GIT_CONFIG_NOSYSTEM=1", "PATH=" TB_DEFAULT_PATH, NULL };
        /* git gets no signal mask of ours (the supervisor's, after a session):
         * spawn gives every child an empty one. */
        struct spawn s = { .argv = argv.v, .envp = envp, .cwd = "/", .std_in = SPAWN_DEV_NULL,
                           .std_out = SPAWN_CAPTURE, .std_err = SPAWN_DEV_NULL, .capture_max = cap - 1 };
        /* The capture is read to the end, whatever its size: a child left
         * writing to a full pipe would never be reaped. */
        int r = spawn_run(&s, NULL);
        strv_done(&argv);
        size_t len = r == 0 && s.out.len < cap ? s.out.len : 0;
        memcpy(out, r == 0 ? s.out.buf : "", len);
        out[len] = '\0';
        if (len_out)
                *len_out = len;
        bool ok = r == 0 && !s.out.truncated && s.status == 0;
        spawn_done(&s);
        return ok;
}
