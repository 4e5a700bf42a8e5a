#define _GNU_SOURCE
#include "gitguard/gitconfig.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/cleanup.h"

/* git's own ctype (git-compat-util.h): ASCII only, whatever the locale. */
static bool g_space(int c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}
static bool g_alpha(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
static bool g_keychar(int c) {
  return g_alpha(c) || (c >= '0' && c <= '9') || c == '-';
}
static int g_lower(int c) { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; }

struct cursor {
  const char *p, *end;
  bool eof;
};

/* get_next_char(): CRLF reads as LF; the end reads as a final LF. */
static int next_char(struct cursor *c) {
  if (c->p >= c->end) {
    c->eof = true;
    return '\n';
  }
  int ch = (unsigned char)*c->p++;
  if (ch == '\r' && c->p < c->end && *c->p == '\n')
    ch = (unsigned char)*c->p++;
  return ch;
}

/* parse_value(): the value after '=', to the end of its line, into buf
 * (NUL-terminated, *len bytes). false on what git refuses, or leaves to git. */
static bool parse_value(struct cursor *c, char *buf, size_t cap, size_t *len) {
  bool quote = false, comment = false;
  size_t space = 0, n = 0;
  for (;;) {
    int ch = next_char(c);
    if (ch == '\n') {
      buf[n] = '\0';
      *len = n;
      return !quote;
    }
    if (comment)
      continue;
    if (g_space(ch) && !quote) {
      if (n)
        space++;
      continue;
    }
    if (!quote && (ch == ';' || ch == '#')) {
      comment = true;
      continue;
    }
    for (; space; space--) {
      if (n + 1 >= cap)
        return false;
      buf[n++] = ' ';
    }
    if (ch == '\\') {
      ch = next_char(c);
      if (ch == 't')
        ch = '\t';
      else if (ch == 'b')
        ch = '\b';
      else if (ch == 'n')
        ch = '\n';
      else if (ch != '\\' && ch != '"')
        return false; /* a continuation (git's), or an unknown escape (an error)
                       */
    } else if (ch == '"') {
      quote = !quote;
      continue;
    }
    if (n + 1 >= cap)
      return false;
    buf[n++] = (char)ch;
  }
}

/* get_base_var() and get_extended_base_var(): after '[', the section name
 * (lowercased) and the subsection's, joined by '.'. *sub says there was one. */
static bool parse_section(struct cursor *c, char *sec, size_t cap, bool *sub) {
  size_t n = 0;
  *sub = false;
  for (;;) {
    int ch = next_char(c);
    if (c->eof)
      return false;
    if (ch == ']')
      break;
    if (g_space(ch)) {
      /* [section "subsection"]: what the subsection is does
       * not matter here (user.<sub>.name is not user.name),
       * only that it is well-formed. */
      do
        ch = next_char(c);
      while (g_space(ch) && ch != '\n');
      if (ch != '"')
        return false;
      for (;;) {
        ch = next_char(c);
        if (ch == '\n')
          return false;
        if (ch == '"')
          break;
        if (ch == '\\' && next_char(c) == '\n')
          return false;
      }
      if (next_char(c) != ']')
        return false;
      *sub = true;
      break;
    }
    if (!g_keychar(ch) && ch != '.')
      return false;
    if (n + 1 >= cap)
      return false;
    sec[n++] = (char)g_lower(ch);
  }
  sec[n] = '\0';
  return n > 0;
}

void gitconfig_identity_take(char **to, const char *value, size_t len) {
  if (len == 0)
    return;
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)value[i] < 0x20 || value[i] == 0x7f)
      return;
  free(*to);
  *to = xmalloc(len + 1);
  memcpy(*to, value, len);
  (*to)[len] = '\0';
}

int gitconfig_identity(const char *text, size_t len, char **name,
                       char **email) {
  /* Bytes git's ctype and ours might not agree on (\v, \f, NUL, ...):
   * git decides. */
  for (size_t i = 0; i < len; i++) {
    unsigned char ch = (unsigned char)text[i];
    if (ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r')
      return -EOPNOTSUPP;
  }
  struct cursor c = {.p = text, .end = text + len};
  if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
    c.p += 3;
  char section[256] = "", key[256];
  bool sub = false, comment = false;
  _cleanup_free_ char *value = xmalloc(len + 1);
  for (;;) {
    int ch = next_char(&c);
    if (ch == '\n') {
      if (c.eof)
        return 0;
      comment = false;
      continue;
    }
    if (comment || g_space(ch))
      continue;
    if (ch == '#' || ch == ';') {
      comment = true;
      continue;
    }
    if (ch == '[') {
      if (!parse_section(&c, section, sizeof section, &sub))
        return -EOPNOTSUPP;
      /* What git would follow to another file: git reads it. */
      if (strcmp(section, "include") == 0 || strcmp(section, "includeif") == 0)
        return -EOPNOTSUPP;
      continue;
    }
    if (!g_alpha(ch))
      return -EOPNOTSUPP;
    size_t k = 0;
    do {
      if (k + 1 >= sizeof key)
        return -EOPNOTSUPP;
      key[k++] = (char)g_lower(ch);
      ch = next_char(&c);
    } while (!c.eof && g_keychar(ch));
    key[k] = '\0';
    while (ch == ' ' || ch == '\t')
      ch = next_char(&c);
    size_t vlen = 0;
    bool has_value = ch != '\n';
    if (has_value && (ch != '=' || !parse_value(&c, value, len + 1, &vlen)))
      return -EOPNOTSUPP;
    if (sub || strcmp(section, "user") != 0 || !has_value)
      continue;
    if (strcmp(key, "name") == 0)
      gitconfig_identity_take(name, value, vlen);
    else if (strcmp(key, "email") == 0)
      gitconfig_identity_take(email, value, vlen);
  }
}
