/* The user's own variables for a session: a plan line's `env` object, and
 * `run --env-file FILE` (the same object, in a file: the batch hands its
 * run the plan's `env` through a pipe, /dev/fd/N, so that no value is ever
 * in an argv another user can read with ps). One rule for both: a name is
 * [A-Za-z_][A-Za-z0-9_]* and not one sandbox_env_reserved() keeps; a value
 * is a string without NUL. Values are treated as secrets: --dry-run
 * redacts them, and what held them is erased. */
#ifndef TB_SESSION_ENV_H
#define TB_SESSION_ENV_H

#include <json-c/json.h>

#include "base/error.h"
#include "base/strv.h"

/* At most this much JSON (the whole object): what a pipe takes at once. */
#define SESSION_ENV_MAX_BYTES 60000

/* Check a variable's name: 0, or -EINVAL with err saying "'NAME' why". */
int session_env_name_check(const char *name, struct tb_error *err);

/* Check one variable: 0, or -EINVAL with err saying "NAME: why" (the value
 * never shown). */
int session_env_check(const char *name, json_object *value, struct tb_error *err);

/* The variables of the JSON object `j` appended to `out` as "NAME=VALUE",
 * each checked: 0, or -EINVAL with err (nothing appended). */
int session_env_from_json(json_object *j, struct strv *out, struct tb_error *err);

/* Read FILE (followed if a link: the operator's own; a pipe too), one JSON
 * object of at most SESSION_ENV_MAX_BYTES: 0 with its variables appended to
 * `out`, or a negative errno with err naming the file. */
int session_env_read(const char *path, struct strv *out, struct tb_error *err);

/* The "NAME=VALUE" strings of `env` as one JSON object (malloc'd; erase it
 * with erase_and_free()). */
char *session_env_to_json(const struct strv *env);

/* Erase and free every value of `env` (strv_done for secrets). */
void session_env_done(struct strv *env);

#endif
