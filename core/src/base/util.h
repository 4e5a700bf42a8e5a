/* Every base module at once: transitional, for core/src/cmd/ only, which
 * reaches these helpers through base/env.h until its rewrite includes the
 * modules it uses. Nothing else includes this header; it goes with that
 * rewrite. */
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
