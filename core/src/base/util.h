/* The generic base modules at once, for the command layer (core/src/cmd/,
 * through base/env.h) and the tests' toolkit (tests/lib/tb_test.h), which use
 * most of them. Library code below cmd/ includes the modules it uses, one by
 * one. */
#ifndef TB_UTIL_H
#define TB_UTIL_H

#include "base/alloc.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/fileio.h"
#include "base/macro.h"
#include "base/path.h"
#include "base/str.h"
#include "base/strbuf.h"
#include "base/strv.h"

#endif
