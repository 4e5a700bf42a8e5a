/* The Credentials file: a JSON object of secrets, one section per Harness,
 * `{"claude": {"setup_token": "…"}, "opencode": {"api_key": "…"}}`, at
 * $XDG_CONFIG_HOME/trialbox/credentials.json (default
 * ~/.config/trialbox/credentials.json) unless `--credentials FILE` says
 * otherwise.
 *
 * Values are secrets: they live in memory as this module's own strings,
 * zeroed before they are freed, and no message ever contains one. The file is
 * only ever written atomically with mode 0600. A plugin reads only its own
 * section: the host services pass the plugin's name as `section` to
 * credentials_get() and nothing else of the file reaches it. */
#ifndef TB_CREDENTIALS_H
#define TB_CREDENTIALS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/cleanup.h"
#include "base/error.h"
#include "base/strv.h"

/* The largest Credentials file (and value) accepted: 1 MiB. */
#define CREDENTIALS_MAX_SIZE (1024L * 1024)

/* Loaded Credentials: opaque; sections and keys keep the file's order. */
struct credentials;

/* The default file's path, malloc'd in *out: $XDG_CONFIG_HOME when it is set
 * and absolute (a relative one is ignored, as the XDG spec says), else
 * $HOME/.config (HOME must be absolute; else the password database's home),
 * then "/trialbox/credentials.json"; both from `env` (env.h). Returns 0, or
 * -ENOENT when no home can be found (*out untouched). */
struct tb_env;
int credentials_default_path(const struct tb_env *env, char **out);

/* A new empty set of Credentials, as for a missing file. Never fails;
 * free with credentials_free(). */
struct credentials *credentials_new(void);

/* Load the Credentials file at `path` into *out (free with
 * credentials_free()). A missing file gives empty Credentials and 0.
 * The file is opened without following a symlink and must be a regular file
 * of at most CREDENTIALS_MAX_SIZE bytes. Errors (negative errno, `err`
 * filled with one line naming the file, never a value):
 *   -EINVAL  invalid JSON (with line, column and json-c's reason), trailing
 *            data, a top level that is not an object, a section that is not
 *            an object of strings, a value that is not a string or contains
 *            NUL, a section or key with a name outside the key syntax;
 *   -ELOOP   `path` is a symlink; -EFBIG too large; -EISDIR or -EINVAL not a
 *            regular file; any open/read error as is.
 * A file readable or writable by group or others still loads: see
 * credentials_loose_mode(). */
int credentials_load(const char *path, struct credentials **out, struct tb_error *err);

/* Parse the `len` bytes at `text` (a Credentials file's contents; no NUL
 * terminator needed, and a NUL byte is data, never an end) into new
 * Credentials in *out (free with credentials_free()); `path` only names the
 * file in messages. credentials_load() reads the file and calls this. The
 * result owns copies of the values: `text` is not kept, and the caller
 * zeroes its own copy of the secrets. credentials_loose_mode() is false for
 * the result. Errors (negative errno, *out untouched, `err` filled with one
 * line naming `path`, never a value):
 *   -EINVAL  every content error listed for credentials_load(), empty text
 *            included ("unexpected end of data");
 *   -EFBIG   `len` is over CREDENTIALS_MAX_SIZE;
 *   -ENOMEM  json-c could not allocate its parser. */
int credentials_parse(const char *text, size_t len, const char *path, struct credentials **out,
                      struct tb_error *err);

/* Was the loaded file's mode open to group or others (mode & 077)? The
 * caller warns: log_warn(CREDENTIALS_LOOSE_WARNING, path, path). False for a
 * missing file. */
bool credentials_loose_mode(const struct credentials *c);
#define CREDENTIALS_LOOSE_WARNING "credentials '%s' is readable by others; run: chmod 600 '%s'"

/* The value of section.key, or NULL when absent. Borrowed: valid until the
 * key is set or unset again or `c` is freed. Never print it. */
const char *credentials_get(const struct credentials *c, const char *section, const char *key);

/* Set section.key to a copy of `value` (an older value is zeroed and freed;
 * a missing section is made). Returns 0, or -EINVAL (nothing changed) when
 * the section or key name is invalid (see credentials_parse_key()) or the
 * value is empty or not valid UTF-8. */
int credentials_set(struct credentials *c, const char *section, const char *key, const char *value);

/* Remove section.key, zeroing its value; a section left empty is removed.
 * Returns 0, or -ENOENT when it was not there. */
int credentials_unset(struct credentials *c, const char *section, const char *key);

/* Append every name as "section.key" to `out`, sorted (strcmp order among
 * the appended ones). Names only: values never leave through this. */
void credentials_names(const struct credentials *c, struct strv *out);

/* Write `c` to `path` as pretty JSON: the parent folder is made (mode 0700)
 * when missing, then a temporary file (O_EXCL, mode 0600 whatever the umask)
 * is written, fsynced and renamed over `path`, and the folder fsynced. The
 * serialised text is built in a private buffer that is zeroed afterwards.
 * Errors (negative errno, `err` filled with one line naming the file):
 *   -ELOOP   `path` is a symlink (it is not followed, and not replaced);
 *   -EISDIR  `path` names a folder; -EINVAL something else not a regular file;
 *   any mkdir/open/write/rename error as is. */
int credentials_save(const struct credentials *c, const char *path, struct tb_error *err);

/* Split "section.key" into malloc'd *section and *key. The section is
 * [a-z0-9_-]+ and the key [A-Za-z0-9_-]+, with exactly one '.' between
 * them. Returns 0, or -EINVAL (outputs untouched) for anything else. */
int credentials_parse_key(const char *dotted, char **section, char **key);

/* Is `name` a valid section name ([a-z0-9_-]+)? A valid key name ([A-Za-z0-9_-]+)? */
bool credentials_section_name_valid(const char *name);
bool credentials_key_name_valid(const char *name);

/* Free `c` (NULL is fine), zeroing every value first (explicit_bzero). */
void credentials_free(struct credentials *c);

static inline void credentials_freep(struct credentials **c) { credentials_free(*c); }
#define _cleanup_credentials_ _cleanup_(credentials_freep)

#endif
