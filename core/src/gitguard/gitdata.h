/* What of a git directory is data, and whether a session's data is well
 * formed: the names and values git itself would accept, checked without
 * running git. Pure functions of their input: no file is read here. */
#ifndef TB_GITGUARD_GITDATA_H
#define TB_GITGUARD_GITDATA_H

#include <stdbool.h>
#include <stddef.h>

/* The kinds of a git directory's top-level entries. */
enum gitdata_kind {
        GITDATA_CONTROL,     /* put back as it was before the session (config, hooks, info, ...) */
        GITDATA_HEAD,        /* HEAD: kept when a valid ref value, else put back */
        GITDATA_REFS,        /* refs/: folders and ref files with valid names and values */
        GITDATA_PACKED_REFS, /* packed-refs: kept when every line is valid, else put back */
        GITDATA_OBJECTS,     /* objects/: loose objects, packs, and the few files git keeps there */
        GITDATA_LOGS,        /* logs/: reflogs, folders and regular files */
        GITDATA_INDEX,       /* index, sharedindex.<hex>: a regular file with git's index signature */
        GITDATA_PSEUDO_REF,  /* ORIG_HEAD, FETCH_HEAD, ...: regular files whose lines start with an object id */
        GITDATA_TEXT,        /* COMMIT_EDITMSG, MERGE_MSG, ...: regular files, kept as they are */
        GITDATA_MODULES,     /* modules/: submodules' git directories, each checked the same way */
        GITDATA_WORKTREES,   /* worktrees/: linked worktrees' own git directories */
};

/* The kind of the entry `name` at the top of a git directory. `worktree`:
 * the directory is a linked worktree's own (C/worktrees/NAME), which holds
 * no objects, refs or submodules of its own. */
enum gitdata_kind gitdata_kind(const char *name, bool worktree);

/* git check-ref-format's rules for a whole refname such as
 * "refs/heads/main": components not empty, not starting with '.', not
 * ending with ".lock"; no "..", "@{", control characters, space, ~ ^ : ? * [ \;
 * not ending with '/' or '.'. */
bool gitdata_refname_valid(const char *name);

/* A loose ref's content: an object id (40 or 64 lowercase hex digits) or
 * "ref: " and a valid refname, then one newline (git writes one). */
bool gitdata_ref_value_valid(const char *s, size_t len);

/* packed-refs: an optional "# pack-refs with:" first line, then lines
 * "<oid> <refname>" and "^<oid>" (a peeled tag, after a ref line). */
bool gitdata_packed_refs_valid(const char *s, size_t len);

/* A pseudo-ref file (ORIG_HEAD, FETCH_HEAD, ...): every line starts with an
 * object id, then nothing, or a tab or space and text without control
 * characters. */
bool gitdata_pseudo_ref_valid(const char *s, size_t len);

/* The name of an entry of objects/ at `depth` 0 (objects/NAME), or 1 below
 * `parent` (objects/PARENT/NAME): loose objects, packs and their files,
 * info/packs, commit-graph(s), multi-pack-index. Temporary files
 * (tmp_obj_*, tmp_pack_*) are not data: a finished git leaves none. */
bool gitdata_object_name_valid(const char *parent, const char *name, bool is_dir);

#endif
