/* What a Trial cost: the host services of ABI 1.4 (plugin.h) that read a
 * Harness's own files in the Trial's home after the session, and the tally
 * of what its plugin recorded, which becomes the Outcome's `tokens`.
 *
 * The home is attacker-made, so every bound is here, once, not in the
 * plugins: the files are found by base/newest.h (no link followed, one
 * filesystem, regular files with one link owned by the session's user),
 * opened beneath the home's fd (open_beneath: no link at any step) with
 * O_NONBLOCK and checked regular again, read a line at a time by
 * base/lines.h (nothing held but one line), each line parsed by json-c's
 * tokenizer with a depth limit. A forged file can change the Trial's own
 * numbers, never crash, hang or grow the record past its bounds. */
#ifndef TB_PLUGIN_TOKENS_H
#define TB_PLUGIN_TOKENS_H

#include <trialbox/plugin.h>

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define TOKENS_MAX_FILES 256                  /* files read per read_jsonl, the newest */
#define TOKENS_MAX_FILE_BYTES (128ull << 20)  /* of each file */
#define TOKENS_MAX_TOTAL_BYTES (512ull << 20) /* of all files, per Trial */
#define TOKENS_MAX_LINE (4u << 20)            /* bytes of one line */
#define TOKENS_MAX_DEPTH 8                    /* folders below read_jsonl's folder */
#define TOKENS_MAX_ENTRIES 200000             /* folder entries looked at per read_jsonl */
#define TOKENS_JSON_DEPTH 128                 /* nesting of one line */
#define TOKENS_MAX_KEYS 65536                 /* units record_tokens keeps */
#define TOKENS_KEY_MAX 255                    /* bytes of a key */
#define TOKENS_MODELS_SEEN 64                 /* model names told apart */

struct tokens_tally;
struct trial_tokens;

/* What one `tokens` hook reads and records: the Trial's home at `home_fd`
 * (borrowed; -1: none), whose files count only when `owner` owns them (the
 * session's user). Free it with tokens_tally_free. */
struct tokens_tally *tokens_tally_new(int home_fd, uid_t owner);
void tokens_tally_free(struct tokens_tally *t);

/* The services of ABI 1.4 (plugin.h documents them), on the tally of the
 * hook that runs; NULL (no hook runs) gives -EPERM (json_string: NULL).
 * `host` is handed back to `fn` as is. */
int tokens_home_fd(const struct tokens_tally *t);
int tokens_read_jsonl(struct tokens_tally *t, struct tb_host *host, const char *folder, unsigned max_depth,
                      const char *suffix, const char *const needles[], unsigned flags, tb_jsonl_fn fn, void *ctx);
int tokens_json_count(struct tokens_tally *t, const struct tb_json *line, const char *path, uint64_t *out);
const char *tokens_json_string(const struct tokens_tally *t, const struct tb_json *line, const char *path);
int tokens_record(struct tokens_tally *t, const char *key, const struct tb_tokens *in);

/* The sum over what was recorded into `out` (out->known false: nothing),
 * saturated; *why (may be NULL; the tally's) the first reason it is
 * partial, "" when it is not. */
void tokens_tally_result(struct tokens_tally *t, struct trial_tokens *out, const char **why);

/* Is `name` a model name the record lists (1 to TOKENS_MODEL_MAX bytes of
 * printable ASCII but '"' and '\\')? */
bool tokens_model_valid(const char *name);

#endif
