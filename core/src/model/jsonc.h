/* json-c's cleanup, for every layer that reads or writes JSON (they all sit
 * above model/, the lowest that links json-c; base/ links alone):
 *
 *   _cleanup_json_ struct json_object *j = json_tokener_parse(text);
 *
 * puts the reference when j goes out of scope; TAKE_PTR(j) hands it on. */
#ifndef TB_JSONC_H
#define TB_JSONC_H

#include <json-c/json.h>

#include "base/cleanup.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct json_object *, json_object_put)
#define _cleanup_json_ _cleanup_(json_object_putp)

#endif
