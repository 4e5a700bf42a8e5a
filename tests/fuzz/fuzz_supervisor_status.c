/* libFuzzer target: the reader of bwrap's --json-status-fd documents,
 * supervisor_parse_status().
 *
 * The supervisor hands it one line at a time as a C string, so the input is
 * copied and NUL-terminated (a NUL byte inside ends the line early, as it
 * would there). Invalid input must leave both outputs untouched. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/supervisor.h"

#define FUZZ_TARGET "fuzz_supervisor_status"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        /* The supervisor's line buffer is 8 KiB: no longer line reaches the parser. */
        if (size > 8191)
                return 0;
        char *line = malloc(size + 1);
        if (!line)
                return 0;
        memcpy(line, data, size);
        line[size] = '\0';

        long child_pid = -12345;
        int exit_code = -12345;
        int r = supervisor_parse_status(line, &child_pid, &exit_code);
        check(r == 0 || r == -EINVAL, "the result is 0 or -EINVAL");
        if (r < 0)
                check(child_pid == -12345 && exit_code == -12345, "invalid input leaves the outputs untouched");
        free(line);
        return 0;
}
