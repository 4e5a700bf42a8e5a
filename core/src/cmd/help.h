/* --help, printed from the commands' tables (command.h): the synopsis
 * wrapped to 80 columns, the description, a row per option and per exit
 * status. tests/unit/test_help.c reads what these print and compares it with
 * man/trialbox.1. */
#ifndef TB_CMD_HELP_H
#define TB_CMD_HELP_H

#include <stdio.h>

#include "cmd/command.h"

/* `trialbox CMD --help`: "usage: " and the command's synopsis, its
 * description, its options (headed rows; --help itself is not listed), its
 * exit statuses. */
void cli_help_print(const struct cli_command *cmd, FILE *out);

/* `trialbox --help`: "usage: " and every command's synopsis, then
 * `last_synopsis` ("trialbox --help | --version"); `description`; a row per
 * command with its summary; where more is said. */
void cli_help_print_all(const struct cli_command *commands, size_t n, const char *last_synopsis,
                        const char *description, FILE *out);

#endif
