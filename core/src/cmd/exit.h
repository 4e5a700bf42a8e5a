/* trialbox's exit statuses, and the one place in the command line where an
 * error becomes one: a line on stderr and the status returned from main.
 *
 * The statuses a Trial or a batch ends with are made below the command line
 * (outcome_exit_status(), trial_run(), batch_run() return them), so they are
 * defined beside the Outcome and the batch, and only gathered here:
 *   model/outcome.h        TB_EXIT_USAGE 2, TB_EXIT_TIMEOUT 124,
 *                          TB_EXIT_VOID 125, TB_EXIT_ERROR 126
 *   experiments/batch.h    TB_BATCH_EXIT_VOID 1
 * The command line adds CLI_EXIT_FAILED below. Which command returns which,
 * and what each means to its user, is each command's table of statuses
 * (cli_usage.statuses, printed by its --help, the same as man/trialbox.1's
 * EXIT STATUS: tests/unit/test_help.c compares them). */
#ifndef TB_CMD_EXIT_H
#define TB_CMD_EXIT_H

#include "experiments/batch.h"
#include "model/outcome.h"

#define CLI_EXIT_OK 0
/* `check`: a Trial cannot start here; `credentials`: the file could not be
 * read or written, or unset's KEY is not in it. */
#define CLI_EXIT_FAILED 1

/* A usage error: "trialbox: <what is wrong>; see 'trialbox COMMAND --help'"
 * on stderr (`command` NULL: "see 'trialbox --help'"); returns TB_EXIT_USAGE. */
int cli_usage_error(const char *command, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Any other error: "trialbox: <what is wrong>" on stderr; returns `status`. */
int cli_fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
