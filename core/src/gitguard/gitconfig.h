/* What the host's git config says that a Trial needs, read from git's
 * config files without running git, which costs a Trial more than the rest
 * of its start-up: the host user's identity (user.name, user.email), and
 * the paths the repository guard must keep (hooks folders, included files).
 * The reader follows git's own parser (config.c: git_parse_source,
 * get_base_var, get_value, parse_value) for the syntax git documents in
 * git-config(1): sections and subsections, case-insensitive names, quoting,
 * escapes, inline comments, a name without a value. What it does not follow
 * exactly it refuses, and the caller asks git: line continuations, control
 * characters other than tab, CR and LF, anything git would call a syntax
 * error, and for the identity include and includeIf sections (git follows
 * them there). */
#ifndef TB_GITCONFIG_H
#define TB_GITCONFIG_H

#include <stddef.h>

#include "base/strbuf.h"

/* Read `len` bytes of one config file's text. 0 when read: each user.name
 * and user.email found in order went through gitconfig_identity_take() into
 * *name and *email. -EOPNOTSUPP when git must read the file; *name and
 * *email may then hold values already taken, which the caller discards. */
int gitconfig_identity(const char *text, size_t len, char **name, char **email);

/* What `git config --file FILE --get-regexp
 * '^(core\.hookspath|include\.path|includeif\..*\.path)$'` prints for one
 * file of `len` bytes (includes not followed, as git does not with --file or
 * --global), byte for byte, appended to `out`: "KEY VALUE\n" each, "KEY\n"
 * for a name without a value. 0, or -EOPNOTSUPP when git must read the file
 * (`out` unchanged). */
int gitconfig_host_paths(const char *text, size_t len, struct strbuf *out);

/* The rule for one value found, the same whoever read it: a value that is
 * one non-empty printable line (no byte below 0x20, no DEL) replaces *to
 * (the last wins, as for git); any other is ignored. */
void gitconfig_identity_take(char **to, const char *value, size_t len);

#endif
