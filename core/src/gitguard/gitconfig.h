/* The host user's git identity (user.name, user.email) read from git's
 * config files without running git, which costs a Trial more than the rest
 * of its start-up. The reader follows git's own parser (config.c:
 * git_parse_source, get_base_var, get_value, parse_value) for the syntax git
 * documents in git-config(1): sections and subsections, case-insensitive
 * names, quoting, escapes, inline comments, a name without a value. What it
 * does not follow exactly it refuses, and the caller asks git: include and
 * includeIf sections, line continuations, control characters other than tab,
 * CR and LF, and anything git would call a syntax error. */
#ifndef TB_GITCONFIG_H
#define TB_GITCONFIG_H

#include <stddef.h>

/* Read `len` bytes of one config file's text. 0 when read: each user.name
 * and user.email found in order went through gitconfig_identity_take() into
 * *name and *email. -EOPNOTSUPP when git must read the file; *name and
 * *email may then hold values already taken, which the caller discards. */
int gitconfig_identity(const char *text, size_t len, char **name, char **email);

/* The rule for one value found, the same whoever read it: a value that is
 * one non-empty printable line (no byte below 0x20, no DEL) replaces *to
 * (the last wins, as for git); any other is ignored. */
void gitconfig_identity_take(char **to, const char *value, size_t len);

#endif
