/* The plugin loader, against fake plugins the build makes: one good, and one
 * for each way a plugin must be refused. */
#define _GNU_SOURCE
#include <check.h>
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/outcome.h"
#include "plugin/host.h"
#include "plugin/loader.h"
#include "sandbox/spec.h"
#include "tb_test.h"


START_TEST(a_good_plugin_loads_with_its_hooks)
{
        struct plugin p;
        struct tb_error err = { 0 };
        ck_assert_int_eq(plugin_load_file(FAKE_SO("fp_good", "good"), "good", &p, &err), 0);
        ck_assert_str_eq(p.harness->name, "good");
        ck_assert_str_eq(p.harness->default_binary, "/bin/true");
        ck_assert_ptr_nonnull(p.preflight);
        ck_assert_ptr_null(p.prepare_login);
        ck_assert_ptr_nonnull(p.env);
        ck_assert_ptr_nonnull(p.endpoints);
        ck_assert(plugin_needs_userns(&p));
        plugin_unload(&p);
}
END_TEST

START_TEST(a_plugin_of_another_abi_major_is_refused_naming_both_versions)
{
        struct plugin p;
        struct tb_error err = { 0 };
        ck_assert_int_eq(plugin_load_file(FAKE_SO("fp_major", "major"), "major", &p, &err), -EPROTO);
        assert_contains(err.msg, "major.so");
        assert_contains(err.msg, "ABI 2.0");
        char speaks[64];
        snprintf(speaks, sizeof speaks, "speaks %d.%d", TB_PLUGIN_ABI_MAJOR, TB_PLUGIN_ABI_MINOR);
        assert_contains(err.msg, speaks);
        ck_assert_ptr_null(p.dl);
}
END_TEST

/* The rule changed with ABI 1.1 (sudo's): a newer minor of the same major
 * loads. The core reads only what it knows of the plugin's larger struct,
 * and the plugin tests for the services newer than the core's table. */
START_TEST(a_plugin_built_against_a_newer_minor_loads_and_its_newer_parts_are_ignored)
{
        struct plugin p;
        struct tb_error err = { 0 };
        ck_assert_int_eq(plugin_load_file(FAKE_SO("fp_minor", "minor"), "minor", &p, &err), 0);
        ck_assert_uint_eq(TB_PLUGIN_ABI_MINOR_OF(p.harness->abi_version), 99);
        ck_assert_uint_gt(p.harness->size, sizeof(struct tb_harness));
        ck_assert_ptr_nonnull(p.preflight);
        ck_assert_ptr_nonnull(p.env);
        ck_assert_ptr_nonnull(p.endpoints);
        ck_assert(plugin_needs_userns(&p)); /* and the flag bit it knows nothing of is ignored */

        struct tb_host host = { .harness = "minor", .checking = true, .sandboxed = true };
        ck_assert_int_eq(host_call(&host, p.preflight), 0);
        ck_assert(!host.voided);
        ck_assert_uint_eq(host.notes.n, 2);
        ck_assert_str_eq(host.notes.v[1], "newer service absent: done without it");
        host_done(&host);
        plugin_unload(&p);
}
END_TEST

START_TEST(a_plugin_built_against_an_older_minor_loads_and_works_without_the_newer_members)
{
        struct plugin p;
        struct tb_error err = { 0 };
        ck_assert_int_eq(plugin_load_file(FAKE_SO("fp_old", "old"), "old", &p, &err), 0);
        ck_assert_uint_eq(p.harness->abi_version, 0x10000);
        ck_assert_uint_eq(p.harness->size, offsetof(struct tb_harness, flags));
        ck_assert_ptr_nonnull(p.preflight);
        ck_assert_ptr_null(p.prepare_login);
        ck_assert_ptr_nonnull(p.env);
        /* Past its struct: absent, never read from whatever follows it. */
        ck_assert_ptr_null(p.endpoints);
        ck_assert_uint_eq(p.flags, 0);
        ck_assert(!plugin_needs_userns(&p));

        /* Its hooks run with this core's (larger) services table. */
        struct sandbox_spec spec = { 0 };
        struct tb_host host = { .harness = "old", .spec = &spec, .sandboxed = true };
        ck_assert_int_eq(host_call(&host, p.preflight), 0);
        ck_assert_str_eq(host.notes.v[0], "fake preflight ran");
        ck_assert_int_eq(host_call(&host, p.env), 0);
        ck_assert_str_eq(sandbox_getenv(&spec, "FAKE_ENV"), "1");
        ck_assert_int_eq(host_call(&host, p.endpoints), 0);
        size_t n;
        host_endpoints(&host, &n);
        ck_assert_uint_eq(n, 0);
        host_done(&host);
        sandbox_spec_done(&spec);
        plugin_unload(&p);
}
END_TEST

START_TEST(the_exclusive_resource_of_abi_1_2_is_read_only_when_the_plugins_size_reaches_it)
{
        struct plugin p;
        struct tb_error err = { 0 };
        ck_assert_int_eq(plugin_load_file(FAKE_SO("fp_exclusive", "exclusive"), "exclusive", &p, &err), 0);
        ck_assert_str_eq(p.exclusive, "fake-resource");
        plugin_unload(&p);
        /* Its struct names one, but its size stops before the member. */
        ck_assert_int_eq(plugin_load_file(FAKE_SO("fp_noexclusive", "noexclusive"), "noexclusive", &p, &err), 0);
        ck_assert_ptr_null(p.exclusive);
        ck_assert_ptr_nonnull(p.endpoints);
        plugin_unload(&p);
        /* A plugin of ABI 1.0 has none. */
        ck_assert_int_eq(plugin_load_file(FAKE_SO("fp_old", "old"), "old", &p, &err), 0);
        ck_assert_ptr_null(p.exclusive);
        plugin_unload(&p);
}
END_TEST

/* A plugin built against 1.3 loads unchanged: everything it has, and no
 * tokens hook; a plugin of 1.4 gets its hook called after the session. */
START_TEST(the_tokens_hook_of_abi_1_4_is_read_only_when_the_plugins_size_reaches_it)
{
        struct plugin p;
        struct tb_error err = { 0 };
        ck_assert_int_eq(plugin_load_file(FAKE_SO("fp_notokens", "notokens"), "notokens", &p, &err), 0);
        ck_assert_uint_eq(p.harness->size, offsetof(struct tb_harness, tokens));
        ck_assert_ptr_nonnull(p.preflight);
        ck_assert_ptr_nonnull(p.env);
        ck_assert_ptr_nonnull(p.endpoints);
        ck_assert_str_eq(p.exclusive, "fake-resource");
        ck_assert(plugin_needs_userns(&p));
        ck_assert_ptr_null(p.tokens);
        int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct tb_host host = { .harness = "notokens", .sandboxed = true, .home_fd = &fd };
        struct trial_tokens t;
        host_read_tokens(&host, p.tokens, &t);
        ck_assert(!t.known);
        host_done(&host);
        plugin_unload(&p);

        ck_assert_int_eq(plugin_load_file(FAKE_SO("fp_good", "good"), "good", &p, &err), 0);
        ck_assert_ptr_nonnull(p.tokens);
        host = (struct tb_host){ .harness = "good", .sandboxed = true, .home_fd = &fd };
        host_read_tokens(&host, p.tokens, &t);
        ck_assert(t.known);
        ck_assert_int_eq(t.input, 10);
        ck_assert_str_eq(t.models[0], "fake-model");
        host_done(&host);
        plugin_unload(&p);

        /* Older still: none. */
        ck_assert_int_eq(plugin_load_file(FAKE_SO("fp_old", "old"), "old", &p, &err), 0);
        ck_assert_ptr_null(p.tokens);
        plugin_unload(&p);
        close(fd);
}
END_TEST

START_TEST(a_plugin_naming_an_exclusive_resource_outside_the_alphabet_is_refused)
{
        struct plugin p;
        struct tb_error err = { 0 };
        ck_assert_int_eq(plugin_load_file(FAKE_SO("fp_badexclusive", "badexclusive"), "badexclusive", &p, &err), -EINVAL);
        ck_assert_msg(strstr(err.msg, "exclusive resource") && strstr(err.msg, "badexclusive.so"), "%s", err.msg);
}
END_TEST

START_TEST(the_members_of_abi_1_1_are_read_only_when_the_plugins_size_reaches_them)
{
        struct plugin p;
        struct tb_error err = { 0 };
        /* Its struct sets flags and endpoints, but its size stops before flags. */
        ck_assert_int_eq(plugin_load_file(FAKE_SO("fp_noflags", "noflags"), "noflags", &p, &err), 0);
        ck_assert_ptr_nonnull(p.env);
        ck_assert(!plugin_needs_userns(&p));
        ck_assert_ptr_null(p.endpoints);
        plugin_unload(&p);

        /* ... and here it stops before endpoints. */
        ck_assert_int_eq(plugin_load_file(FAKE_SO("fp_noendpoints", "noendpoints"), "noendpoints", &p, &err), 0);
        ck_assert(plugin_needs_userns(&p));
        ck_assert_ptr_null(p.endpoints);
        plugin_unload(&p);

        /* The whole struct: the endpoints hook declares through the host. */
        ck_assert_int_eq(plugin_load_file(FAKE_SO("fp_good", "good"), "good", &p, &err), 0);
        struct tb_host host = { .harness = "good", .checking = true };
        ck_assert_int_eq(host_call(&host, p.endpoints), 0);
        assert_endpoints(&host, { "api.fake.test:443", true }, { "telemetry.fake.test", false });
        host_done(&host);
        plugin_unload(&p);
}
END_TEST

START_TEST(a_plugin_without_the_symbol_is_refused)
{
        struct plugin p;
        struct tb_error err = { 0 };
        ck_assert_int_eq(plugin_load_file(FAKE_SO("fp_nosym", "nosym"), "nosym", &p, &err), -ENOENT);
        assert_contains(err.msg, "nosym.so");
        assert_contains(err.msg, "trialbox_harness");
}
END_TEST

START_TEST(a_plugin_whose_name_is_not_its_file_name_is_refused)
{
        struct plugin p;
        struct tb_error err = { 0 };
        ck_assert_int_eq(plugin_load_file(FAKE_SO("fp_mismatch", "mismatch"), "mismatch", &p, &err), -EINVAL);
        assert_contains(err.msg, "mismatch.so' calls itself 'other', not 'mismatch'");
}
END_TEST

START_TEST(hooks_past_a_plugins_size_are_absent)
{
        struct plugin p;
        struct tb_error err = { 0 };
        /* size 40 reaches default_binary and preflight only. */
        ck_assert_int_eq(plugin_load_file(FAKE_SO("fp_small", "small"), "small", &p, &err), 0);
        ck_assert_ptr_nonnull(p.preflight);
        ck_assert_ptr_null(p.prepare_login);
        ck_assert_ptr_null(p.env);
        plugin_unload(&p);
}
END_TEST

START_TEST(a_plugin_or_folder_writable_by_others_is_refused)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        char to[1024];
        struct plugin p;
        struct tb_error err = { 0 };
        snprintf(to, sizeof to, "%s/good.so", dir);
        copy_file(FAKE_SO("fp_good", "good"), to, 0666, SIZE_MAX);
        ck_assert_int_eq(plugin_load_file(to, "good", &p, &err), -EPERM);
        assert_contains(err.msg, to);
        assert_contains(err.msg, "writable by others");
        assert_contains(err.msg, "chmod go-w");

        ck_assert_int_eq(chmod(to, 0644), 0);
        ck_assert_int_eq(plugin_load_file(to, "good", &p, &err), 0);
        plugin_unload(&p);

        ck_assert_int_eq(chmod(dir, 0777), 0);
        ck_assert_int_eq(plugin_load_file(to, "good", &p, &err), -EPERM);
        assert_contains(err.msg, "plugin folder");
        chmod(dir, 0755);
}
END_TEST

START_TEST(a_file_that_is_not_a_library_is_refused)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        char to[1024];
        struct plugin p;
        struct tb_error err = { 0 };
        snprintf(to, sizeof to, "%s/text.so", dir);
        write_text(to, "this is not ELF\n", 0644);
        ck_assert_int_eq(plugin_load_file(to, "text", &p, &err), -ENOEXEC);
        assert_contains(err.msg, "text.so' is not a loadable library");

        /* A truncated library passes the magic check and fails in dlopen. */
        char *good = read_text(FAKE_SO("fp_good", "good"));
        snprintf(to, sizeof to, "%s/trunc.so", dir);
        int fd = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ck_assert_int_eq(write(fd, good, 200), 200);
        close(fd);
        free(good);
        ck_assert_int_eq(plugin_load_file(to, "trunc", &p, &err), -ENOEXEC);
        assert_contains(err.msg, "trunc.so' is not a loadable library");
}
END_TEST

/* The program headers are read with the ELF header, in the file's first
 * KiB; a table past it is read on its own and checked as well: a segment
 * past the file's end is refused as truncated, one inside it is left to
 * dlopen (which refuses this one: it is no library). */
static void write_elf(const char *to, Elf64_Xword filesz)
{
        unsigned char file[4096] = { 0 };
        Elf64_Ehdr eh = { .e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB, EV_CURRENT },
                          .e_type = ET_DYN,
                          .e_machine = EM_X86_64,
                          .e_version = EV_CURRENT,
                          .e_phoff = 3000,
                          .e_ehsize = sizeof(Elf64_Ehdr),
                          .e_phentsize = sizeof(Elf64_Phdr),
                          .e_phnum = 1 };
        Elf64_Phdr ph = { .p_type = PT_LOAD, .p_offset = 0, .p_filesz = filesz, .p_memsz = filesz };
        memcpy(file, &eh, sizeof eh);
        memcpy(file + eh.e_phoff, &ph, sizeof ph);
        write_bytes(to, file, sizeof file, 0644);
}

START_TEST(program_headers_past_the_first_kib_are_checked_too)
{
        _cleanup_tmpdir_ char *dir = tmpdir_new();
        char to[1024];
        struct plugin p;
        struct tb_error err = { 0 };
        snprintf(to, sizeof to, "%s/far.so", dir);
        write_elf(to, 8192);
        ck_assert_int_eq(plugin_load_file(to, "far", &p, &err), -ENOEXEC);
        assert_contains(err.msg, "truncated or not a 64-bit ELF");
        write_elf(to, 100);
        err = (struct tb_error){ 0 };
        ck_assert_int_eq(plugin_load_file(to, "far", &p, &err), -ENOEXEC);
        ck_assert_ptr_null(strstr(err.msg, "truncated"));
        assert_contains(err.msg, "far.so' is not a loadable library");
}
END_TEST

START_TEST(the_plugin_path_is_searched_in_order_and_a_missing_harness_lists_the_installed)
{
        char *a = tmpdir_new(), *b = tmpdir_new();
        char to[1024], env[4096];
        snprintf(to, sizeof to, "%s/good.so", b);
        copy_file(FAKE_SO("fp_good", "good"), to, 0644, SIZE_MAX);
        snprintf(env, sizeof env, "%s:%s", a, b);

        struct plugin p;
        struct tb_error err = { 0 };
        ck_assert_int_eq(plugin_load(env, "good", &p, &err), 0);
        ck_assert_str_eq(p.path, to);
        plugin_unload(&p);

        ck_assert_int_eq(plugin_load(env, "codex", &p, &err), -ENOENT);
        assert_contains(err.msg, "no plugin for harness 'codex'");
        assert_contains(err.msg, "installed harnesses: good");
        assert_contains(err.msg, a);

        /* An earlier folder wins; the later one is listed as shadowed. */
        snprintf(to, sizeof to, "%s/good.so", a);
        copy_file(FAKE_SO("fp_good", "good"), to, 0644, SIZE_MAX);
        struct plugin_entry *v;
        size_t n;
        plugin_list(env, &v, &n);
        ck_assert_uint_ge(n, 2);
        ck_assert_str_eq(v[0].path, to);
        ck_assert(!v[0].shadowed);
        ck_assert(v[1].shadowed);
        plugin_list_free(v, n);
        tmpdir_remove(a);
        tmpdir_remove(b);
        free(a);
        free(b);
}
END_TEST

START_TEST(harness_names_are_checked_before_any_file_is_looked_up)
{
        ck_assert(plugin_name_valid("codex"));
        ck_assert(plugin_name_valid("hello-harness"));
        ck_assert(!plugin_name_valid("../etc/x"));
        ck_assert(!plugin_name_valid("Codex"));
        ck_assert(!plugin_name_valid(""));
        ck_assert(!plugin_name_valid("-x"));
}
END_TEST

TB_SUITE("loader", 0)
{
        tcase_add_test(tc, a_good_plugin_loads_with_its_hooks);
        tcase_add_test(tc, a_plugin_of_another_abi_major_is_refused_naming_both_versions);
        tcase_add_test(tc, a_plugin_built_against_a_newer_minor_loads_and_its_newer_parts_are_ignored);
        tcase_add_test(tc, a_plugin_built_against_an_older_minor_loads_and_works_without_the_newer_members);
        tcase_add_test(tc, the_members_of_abi_1_1_are_read_only_when_the_plugins_size_reaches_them);
        tcase_add_test(tc, the_exclusive_resource_of_abi_1_2_is_read_only_when_the_plugins_size_reaches_it);
        tcase_add_test(tc, a_plugin_naming_an_exclusive_resource_outside_the_alphabet_is_refused);
        tcase_add_test(tc, a_plugin_without_the_symbol_is_refused);
        tcase_add_test(tc, a_plugin_whose_name_is_not_its_file_name_is_refused);
        tcase_add_test(tc, hooks_past_a_plugins_size_are_absent);
        tcase_add_test(tc, a_plugin_or_folder_writable_by_others_is_refused);
        tcase_add_test(tc, the_tokens_hook_of_abi_1_4_is_read_only_when_the_plugins_size_reaches_it);
        tcase_add_test(tc, a_file_that_is_not_a_library_is_refused);
        tcase_add_test(tc, program_headers_past_the_first_kib_are_checked_too);
        tcase_add_test(tc, the_plugin_path_is_searched_in_order_and_a_missing_harness_lists_the_installed);
        tcase_add_test(tc, harness_names_are_checked_before_any_file_is_looked_up);
}
