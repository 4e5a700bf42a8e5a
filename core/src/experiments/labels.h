/* An Experiment's labels: the `labels` object of a plan line (and of an
 * Experiment's arms and tasks), carried unchanged into the results, where
 * `trialbox report --by NAME` groups by them. Bounded, so that a results
 * line stays small and a label reads well in a table:
 *   at most LABELS_MAX labels; a name of 1 to LABEL_NAME_MAX letters,
 *   digits, '_' and '-', starting with a letter; a value a string of 1 to
 *   LABEL_VALUE_MAX bytes of UTF-8 without control characters, or a finite
 *   number. */
#ifndef TB_LABELS_H
#define TB_LABELS_H

#include <json-c/json.h>
#include <stddef.h>

#define LABELS_MAX 16
#define LABEL_NAME_MAX 32
#define LABEL_VALUE_MAX 128

/* Check the labels object `j`: 0, or -EINVAL with `where` the label at
 * fault ("" for the object itself, else its name, safe to print) and `why`
 * what is wrong with it. */
int labels_check(json_object *j, char *where, size_t where_len, char *why, size_t why_len);

/* Is `name` a label's name? */
int labels_name_valid(const char *name);

#endif
