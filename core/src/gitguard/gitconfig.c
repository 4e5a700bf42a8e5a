#define _GNU_SOURCE
#include "gitguard/gitconfig.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/strbuf.h"

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
 * (lowercased) into sec, and the subsection as git keeps it (its escapes
 * taken: a backslash keeps the next character, whatever it is) into sub,
 * *sub_len bytes, or *sub_len = (size_t)-1 for none. sub has room for the
 * whole text. */
static bool parse_section(struct cursor *c, char *sec, size_t cap, char *sub, size_t *sub_len) {
  size_t n = 0, k = 0;
  *sub_len = (size_t)-1;
  for (;;) {
    int ch = next_char(c);
    if (c->eof)
      return false;
    if (ch == ']')
      break;
    if (g_space(ch)) {
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
        if (ch == '\\' && (ch = next_char(c)) == '\n')
          return false;
        sub[k++] = (char)ch;
      }
      if (next_char(c) != ']')
        return false;
      sub[k] = '\0';
      *sub_len = k;
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

/* One section header or one name of a config file, as git_parse_source
 * hands them to its callback. */
struct entry {
  const char *section; /* lowercased */
  const char *sub;     /* the subsection, or NULL */
  size_t sub_len;
  const char *name;    /* lowercased; NULL at a section header */
  const char *value;   /* NULL for a name without '=' */
  size_t len;
};

/* Walk the file as git does, calling `fn` for each header and each name;
 * 0, or the first negative value `fn` returns; -EOPNOTSUPP for what git
 * must read itself. */
static int parse(const char *text, size_t len, int (*fn)(const struct entry *e, void *ctx), void *ctx) {
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
  bool comment = false;
  _cleanup_free_ char *value = xmalloc(len + 1);
  _cleanup_free_ char *sub = xmalloc(len + 1);
  size_t sub_len = (size_t)-1;
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
    struct entry e = {.section = section};
    if (ch == '[') {
      if (!parse_section(&c, section, sizeof section, sub, &sub_len))
        return -EOPNOTSUPP;
      e.sub = sub_len == (size_t)-1 ? NULL : sub;
      e.sub_len = sub_len;
      int r = fn(&e, ctx);
      if (r < 0)
        return r;
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
    e.sub = sub_len == (size_t)-1 ? NULL : sub;
    e.sub_len = sub_len;
    e.name = key;
    e.value = has_value ? value : NULL;
    e.len = vlen;
    int r = fn(&e, ctx);
    if (r < 0)
      return r;
  }
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

struct identity {
  char **name, **email;
};

static int identity_entry(const struct entry *e, void *ctx) {
  struct identity *id = ctx;
  /* What git would follow to another file: git reads it. */
  if (!e->name)
    return strcmp(e->section, "include") == 0 || strcmp(e->section, "includeif") == 0 ? -EOPNOTSUPP : 0;
  if (e->sub || strcmp(e->section, "user") != 0 || !e->value)
    return 0;
  if (strcmp(e->name, "name") == 0)
    gitconfig_identity_take(id->name, e->value, e->len);
  else if (strcmp(e->name, "email") == 0)
    gitconfig_identity_take(id->email, e->value, e->len);
  return 0;
}

int gitconfig_identity(const char *text, size_t len, char **name,
                       char **email) {
  struct identity id = {name, email};
  return parse(text, len, identity_entry, &id);
}

/* The key as git prints it: section.subsection.name, the subsection as is. */
static void add_key(struct strbuf *sb, const struct entry *e) {
  strbuf_add(sb, e->section);
  if (e->sub) {
    strbuf_add(sb, ".");
    strbuf_addn(sb, e->sub, e->sub_len);
  }
  strbuf_add(sb, ".");
  strbuf_add(sb, e->name);
}

/* Does `key` match ^(core\.hookspath|include\.path|includeif\..*\.path)$ ? */
static bool host_path_key(const char *key, size_t n) {
  static const char pre[] = "includeif.", suf[] = ".path";
  if (strcmp(key, "core.hookspath") == 0 || strcmp(key, "include.path") == 0)
    return true;
  return n >= sizeof pre - 1 + sizeof suf - 1 && memcmp(key, pre, sizeof pre - 1) == 0 &&
         memcmp(key + n - (sizeof suf - 1), suf, sizeof suf - 1) == 0 && !memchr(key, '\n', n);
}

static int host_path_entry(const struct entry *e, void *ctx) {
  struct strbuf *out = ctx;
  if (!e->name)
    return 0;
  struct strbuf key = {0};
  add_key(&key, e);
  if (host_path_key(key.s, key.len)) {
    strbuf_addn(out, key.s, key.len);
    if (e->value) {
      strbuf_add(out, " ");
      strbuf_addn(out, e->value, e->len);
    }
    strbuf_add(out, "\n");
  }
  free(key.s);
  return 0;
}

int gitconfig_host_paths(const char *text, size_t len, struct strbuf *out) {
  size_t was = out->len;
  int r = parse(text, len, host_path_entry, out);
  if (r < 0 && out->s) {
    out->len = was;
    out->s[was] = '\0';
  }
  return r;
}
