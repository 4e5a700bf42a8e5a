#include "experiments/labels.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/utf8.h"

int labels_name_valid(const char *name)
{
        size_t n = strlen(name);
        bool letter = (name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z');
        return n >= 1 && n <= LABEL_NAME_MAX && letter &&
               strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == n;
}

_Static_assert(LABEL_VALUE_MAX == 128, "the message below says 128");

/* A value: a short string of printable UTF-8, or a finite number. */
static const char *value_problem(json_object *v)
{
        if (json_object_is_type(v, json_type_int))
                return NULL;
        if (json_object_is_type(v, json_type_double))
                return isfinite(json_object_get_double(v)) ? NULL : "must be a finite number";
        if (!json_object_is_type(v, json_type_string))
                return "must be a string or a number";
        const char *s = json_object_get_string(v);
        size_t n = (size_t)json_object_get_string_len(v);
        if (n == 0 || n > LABEL_VALUE_MAX)
                return "must be a string of 1 to 128 bytes";
        if (strlen(s) != n || !utf8_is_valid(s, n))
                return "must be UTF-8 text";
        for (size_t i = 0; i < n; i++)
                if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
                        return "must not hold control characters";
        return NULL;
}

int labels_check(json_object *j, char *where, size_t where_len, char *why, size_t why_len)
{
        snprintf(where, where_len, "%s", "");
        if (!json_object_is_type(j, json_type_object)) {
                snprintf(why, why_len, "must be an object of labels ({\"model\": \"gpt-5\"})");
                return -EINVAL;
        }
        if (json_object_object_length(j) > LABELS_MAX) {
                snprintf(why, why_len, "has more than %d labels", LABELS_MAX);
                return -EINVAL;
        }
        json_object_object_foreach(j, name, v) {
                if (!labels_name_valid(name)) {
                        snprintf(why, why_len,
                                 "a label's name must be 1 to %d letters, digits, '_' or '-', "
                                 "starting with a letter",
                                 LABEL_NAME_MAX);
                        return -EINVAL;
                }
                const char *problem = value_problem(v);
                if (problem) {
                        snprintf(where, where_len, "%s", name);
                        snprintf(why, why_len, "%s", problem);
                        return -EINVAL;
                }
        }
        return 0;
}
