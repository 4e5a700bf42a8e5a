/* The Trial: validate the request, load the Harness's plugin, build the
 * sandbox spec through its hooks, run the session, write the Outcome. */
#ifndef TB_TRIAL_H
#define TB_TRIAL_H

#include <stdbool.h>

#include "sandbox/spec.h"
#include "model/limits.h"
#include "network/trial_net.h"

/* --allow-host may be given this many times. */
#define TRIAL_MAX_ALLOW_HOSTS 64

struct trial_grader;

struct trial_options {
        const char *harness;
        const char *repo;
        const char *output_dir;
        const char *harness_bin; /* NULL: the plugin's default, on the host PATH */
        const char *skills;      /* NULL: none */
        const char *credentials; /* NULL: the default Credentials file */
        bool no_sandbox;
        bool dry_run;
        bool json;
        int verbosity;
        char **session_args; /* NULL-terminated, passed unchanged */
        struct trial_limits limits; /* --timeout, --kill-after, --memory, --pids, --cpus */
        /* Network: the mode, and the --allow-host patterns (checked by the caller). */
        enum trial_network network;
        const char *allow_hosts[TRIAL_MAX_ALLOW_HOSTS];
        size_t n_allow_hosts;
        /* --no-harness-endpoints: under allow, only the --allow-host patterns
         * (the plugin's own endpoints are not added). */
        bool no_harness_endpoints;
        /* --env-file: the user's own variables for the session, one JSON
         * object (trial/session_env.h), or NULL. */
        const char *env_file;
        /* Or those variables already read and checked, "NAME=VALUE"
         * (NULL-terminated; `grade` reads its --env-file first, so that a
         * bad one is its usage error): copied, then erased by the caller. */
        char *const *session_env;
        /* Who the session runs as when trialbox is root (session_user.h). */
        const char *user;  /* --user NAME|UID, or NULL */
        bool root_session; /* --root-session: accept a root session */
        /* --keep-control-files: other tools' control files the session
         * changed stay (listed); by default they are put back. */
        bool keep_control_files;
        /* Set: this Trial is a grader of another Trial's repository
         * (trial/grader.h): the repository behind a copy-on-write layer,
         * no repository guard, the grader's files and its verdict folder. */
        struct trial_grader *grader;
};

/* The variables a session inherits from the host when they are set (more
 * through TRIALBOX_ENV_ALLOW, colon-separated). */
#define TRIAL_ENV_ALLOW                                                                                     \
        "PATH:LANG:LANGUAGE:LC_ALL:LC_CTYPE:LC_MESSAGES:LC_COLLATE:LC_NUMERIC:LC_TIME:LC_MONETARY:TERM:" \
        "COLORTERM:NO_COLOR:TZ:USER:LOGNAME"

struct tb_env;

/* Run one Trial in the host environment `env`; prints its errors; returns
 * trialbox's exit status. Once a session has run, SIGINT, SIGTERM and SIGHUP
 * stay blocked: the caller exits with the status returned (a signal that
 * came after the session ended is dropped; the Outcome stands). One that
 * came before the session ended makes the Trial void/interrupted (exit
 * 128+N): the supervisor forwarded it (supervisor.h). */
int trial_run(const struct trial_options *opt, const struct tb_env *env);

/* Build the environment allowlist part of a session's environment, from
 * the host's `env`. */
void trial_add_allowed_env(struct sandbox_spec *spec, const struct tb_env *env, bool sandboxed);

#endif
