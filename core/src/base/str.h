/* String helpers: prefixes, and the one escaping function for the terminal. */
#ifndef TB_STR_H
#define TB_STR_H

#include <stdbool.h>

bool str_has_prefix(const char *s, const char *prefix);

/* `s` made safe for a terminal, malloc'd: control characters (C0, DEL, C1),
 * and so every escape sequence, and bytes that are not UTF-8 are written
 * visibly as \xNN ("\x1b[31m"), so a message that quotes user input stays one
 * line and sends the terminal nothing. The one escaping function: the logger
 * passes every line through it. */
char *str_escape(const char *s);

#endif
