/* Unit tests of gitconfig.c, the reader of the host's git config: on every
 * case it reads, its answer is git's own (`git config --global -z
 * --get-regexp '^user\.(name|email)$'` for the identity, `git config --file
 * F --get-regexp` of the guard's host paths, byte for byte, run on the same
 * file); what it leaves to git is the syntax it does not follow exactly. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gitguard/gitconfig.h"
#include "tb_test.h"
#include "base/util.h"

/* What git says for HOME=home: name and email by gitconfig_identity_take's
 * rule, NULL where none. */
static void git_says(const char *home, char **name, char **email) {
  *name = *email = NULL;
  _cleanup_free_ char *cmd = xasprintf(
      "env -i HOME='%s' GIT_CONFIG_NOSYSTEM=1 PATH=/usr/bin:/bin git config "
      "--global --includes -z --get-regexp '^user\\.(name|email)$' 2>/dev/null",
      home);
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  char buf[8192];
  size_t len = fread(buf, 1, sizeof buf, p);
  pclose(p);
  for (char *rec = buf; rec < buf + len;) {
    char *end = memchr(rec, '\0', (size_t)(buf + len - rec));
    ck_assert_ptr_nonnull(end);
    char *nl = memchr(rec, '\n', (size_t)(end - rec));
    if (nl) {
      *nl = '\0';
      char **to = strcmp(rec, "user.name") == 0    ? name
                  : strcmp(rec, "user.email") == 0 ? email
                                                   : NULL;
      if (to)
        gitconfig_identity_take(to, nl + 1, (size_t)(end - nl - 1));
    }
    rec = end + 1;
  }
}

static const char *or_none(const char *s) { return s ? s : "(none)"; }

/* Read by gitconfig.c, and the same as git's answer. */
static const char *const read_here[] = {
    "[user]\n\tname = Ada Lovelace\n\temail = ada@example.com\n",
    "[user]\nname=Ada\nemail=ada@example.com", /* no final newline */
    "[User]\n\tNAME = Ada\n\tEmail = a@b\n",   /* names are case-insensitive */
    "[user] name = Same Line\n",
    "[user]\n\tname = \"  quoted  spaces \"\n",
    "[user]\n\tname = unquoted   inner   spaces   \n",
    "[user]\n\tname = tab\tinside\n",
    "[user]\n\tname = Ada # a comment\n\temail = a@b ; another\n",
    "[user]\n\tname = \"Ada # not a comment\"\n",
    "[user]\n\tname = Esc \\\"q\\\" and \\\\ back\n",
    "[user]\n\tname = ctl \\t tab escape\n",
    "[user]\n\tname = first\n\tname = second\n",
    "[user]\n\tname = printable\n\tname = \"bad\\nline\"\n",
    "[user]\n\tname\n\temail = a@b\n", /* a name without a value */
    "[user]\n\tname =\n",
    "[user \"sub\"]\n\tname = not user.name\n[user]\n\temail = a@b\n",
    "[user.sub]\n\tname = not user.name either\n",
    "[core]\n\tpager = less\n# [user]\n; name = commented\n",
    "\xef\xbb\xbf[user]\n\tname = after a BOM\n",
    "[user]\r\n\tname = CRLF\r\n\temail = crlf@example.com\r\n",
    "[user]\n\tname = Zoë Ünïcode\n",
    "[user]\n\tname-x = other key\n\tname = Ada\n",
    "",
    "# only a comment\n",
};

/* Left to git: -EOPNOTSUPP. */
static const char *const left_to_git[] = {
    "[include]\n\tpath = other\n",
    "[includeIf \"gitdir:~/work/\"]\n\tpath = other\n",
    "[user]\n\tname = continued \\\n line\n",
    "[user]\n\tname = \"unterminated\n",
    "[user]\n\tname = bad \\q escape\n",
    "[user\n\tname = x\n",
    "[]\nname = x\n",
    "[user]\n\t1name = x\n",
    "[user]\n\tname # comment\n",
    "[user]\n\tname = form\ffeed\n",
    "[user \"unterminated]\n",
};

START_TEST(every_file_it_reads_gives_gits_answer) {
  _cleanup_free_ char *home = tmpdir_new();
  _cleanup_free_ char *file = path_in(home, ".gitconfig");
  const char *text = read_here[_i];
  write_text(file, text, 0644);
  char *name = NULL, *email = NULL, *gname, *gemail;
  int r = gitconfig_identity(text, strlen(text), &name, &email);
  ck_assert_msg(r == 0, "case %d: left to git: %s", _i, text);
  git_says(home, &gname, &gemail);
  ck_assert_msg(
      (!name && !gname) || (name && gname && strcmp(name, gname) == 0),
      "case %d: name '%s', git says '%s'", _i, or_none(name), or_none(gname));
  ck_assert_msg((!email && !gemail) ||
                    (email && gemail && strcmp(email, gemail) == 0),
                "case %d: email '%s', git says '%s'", _i, or_none(email),
                or_none(gemail));
  free(name);
  free(email);
  free(gname);
  free(gemail);
  tmpdir_remove(home);
}
END_TEST

START_TEST(what_it_does_not_follow_exactly_is_left_to_git) {
  const char *text = left_to_git[_i];
  char *name = NULL, *email = NULL;
  ck_assert_msg(gitconfig_identity(text, strlen(text), &name, &email) ==
                    -EOPNOTSUPP,
                "case %d: %s", _i, text);
  free(name);
  free(email);
}
END_TEST

START_TEST(a_nul_byte_is_left_to_git) {
  static const char text[] = "[user]\n\tname = a\0b\n";
  char *name = NULL, *email = NULL;
  ck_assert_int_eq(gitconfig_identity(text, sizeof text - 1, &name, &email),
                   -EOPNOTSUPP);
  free(name);
  free(email);
}
END_TEST

START_TEST(only_a_printable_line_is_taken_and_the_last_wins) {
  char *to = NULL;
  gitconfig_identity_take(&to, "first", 5);
  ck_assert_str_eq(to, "first");
  gitconfig_identity_take(&to, "", 0);
  gitconfig_identity_take(&to, "a\nb", 3);
  gitconfig_identity_take(&to, "esc\x1b[31m", 8);
  gitconfig_identity_take(&to, "del\x7f", 4);
  ck_assert_str_eq(to, "first");
  gitconfig_identity_take(&to, "Zoë", strlen("Zoë"));
  ck_assert_str_eq(to, "Zoë");
  free(to);
}
END_TEST

/* The repository guard's host paths (gitconfig_host_paths): read here, and
 * byte for byte what git prints. */
static const char *const host_paths_read_here[] = {
    "[core]\n\thooksPath = .husky\n",
    "[Core]\n\tHooksPath = \"  spaced  \" # comment\n",
    "[core \"x\"]\n\thookspath = not core.hookspath\n",
    "[core]\n\thooksPath = a\n\thooksPath = b\n",
    "[include]\n\tpath = ../team.gitconfig\n",
    "[includeIf \"gitdir:~/work/\"]\n\tpath = ~/work.gitconfig\n",
    "[includeIf \"gitdir:/a b/\"]\n\tpath = a space in the subsection\n",
    "[includeIf \"gitdir:/a b/\"]\n\tpath\n",
    "[includeIf \"esc\\\"aped \\\\ and \\x\"]\n\tpath = p\n",
    "[includeif.dotted]\n\tpath = d\n",
    "[includeif]\n\tpath = no subsection\n",
    "[include \"sub\"]\n\tpath = not include.path\n",
    "[include]\n\tpath\n",
    "[include]\n\tpath =\n",
    "[include]\n\tpath = \"two\\nlines\"\n",
    "[include]\n\tpath = tab\\there\n",
    "[include]\n\tPATH = Upper\n\tpaths = other\n",
    "hookspath = before any section\n[core]\n\thookspath = after\n",
    "[user]\n\tname = Ada\n[core]\n\tpager = less\n",
    "\xef\xbb\xbf[core]\r\n\thooksPath = crlf\r\n",
    "[core]\n\thooksPath = Zoë/ünïcode\n",
    "",
    "# only a comment\n",
};

/* Left to git: -EOPNOTSUPP. */
static const char *const host_paths_left_to_git[] = {
    "[core]\n\thooksPath = continued \\\n line\n",
    "[core]\n\thooksPath = \"unterminated\n",
    "[core]\n\thooksPath = bad \\q escape\n",
    "[core\n\thooksPath = x\n",
    "[core]\n\thooksPath = form\ffeed\n",
    "[includeIf \"unterminated]\n\tpath = x\n",
};

#define HOST_PATHS_REGEXP "^(core\\.hookspath|include\\.path|includeif\\..*\\.path)$"

START_TEST(every_host_paths_file_it_reads_gives_gits_lines) {
  _cleanup_free_ char *dir = tmpdir_new();
  _cleanup_free_ char *file = path_in(dir, "config");
  const char *text = host_paths_read_here[_i];
  write_text(file, text, 0644);
  struct strbuf mine = {0};
  strbuf_add(&mine, "");
  ck_assert_msg(gitconfig_host_paths(text, strlen(text), &mine) == 0,
                "case %d: left to git: %s", _i, text);
  _cleanup_free_ char *cmd = xasprintf(
      "env -i HOME='%s' GIT_CONFIG_NOSYSTEM=1 PATH=/usr/bin:/bin git config "
      "--file '%s' --get-regexp '" HOST_PATHS_REGEXP "' 2>/dev/null",
      dir, file);
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  char buf[8192];
  size_t len = fread(buf, 1, sizeof buf, p);
  pclose(p);
  ck_assert_msg(mine.len == len && memcmp(mine.s, buf, len) == 0,
                "case %d: read '%s', git says '%.*s'", _i, mine.s, (int)len,
                buf);
  free(mine.s);
  tmpdir_remove(dir);
}
END_TEST

START_TEST(a_host_paths_file_it_does_not_follow_exactly_is_left_to_git) {
  const char *text = host_paths_left_to_git[_i];
  struct strbuf out = {0};
  strbuf_add(&out, "kept");
  ck_assert_msg(gitconfig_host_paths(text, strlen(text), &out) == -EOPNOTSUPP,
                "case %d: %s", _i, text);
  ck_assert_str_eq(out.s, "kept");
  free(out.s);
}
END_TEST

TB_SUITE("gitconfig", 0) {
  if (host_can("command -v git >/dev/null"))
    tcase_add_loop_test(tc, every_file_it_reads_gives_gits_answer, 0,
                        (int)TB_ARRAY_SIZE(read_here));
  else
    skip_note("every_file_it_reads_gives_gits_answer", "git is not installed");
  tcase_add_loop_test(tc, what_it_does_not_follow_exactly_is_left_to_git, 0,
                      (int)TB_ARRAY_SIZE(left_to_git));
  tcase_add_test(tc, a_nul_byte_is_left_to_git);
  tcase_add_test(tc, only_a_printable_line_is_taken_and_the_last_wins);
  if (host_can("command -v git >/dev/null"))
    tcase_add_loop_test(tc, every_host_paths_file_it_reads_gives_gits_lines, 0,
                        (int)TB_ARRAY_SIZE(host_paths_read_here));
  else
    skip_note("every_host_paths_file_it_reads_gives_gits_lines",
              "git is not installed");
  tcase_add_loop_test(tc,
                      a_host_paths_file_it_does_not_follow_exactly_is_left_to_git,
                      0, (int)TB_ARRAY_SIZE(host_paths_left_to_git));
}
