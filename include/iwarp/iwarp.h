/* SPDX-License-Identifier: BSD-2-Clause */
/* libiwarp: the umbrella header. Include this one. */
#ifndef IWARP_IWARP_H
#define IWARP_IWARP_H

#include "iwarp/common.h"
#include "iwarp/errors.h"
#include "iwarp/version.h"
#include "iwarp/verbs.h"
#include "iwarp/cm.h"
#include "iwarp/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * iwarp_version - the running library's version string, e.g. "0.1.0" (the run-time copy of
 * IWARP_VERSION_STRING; compare them to detect a header/library mismatch).
 *
 * Returns: a static string. Never NULL.
 * Ownership: the string is static; never free it.
 * Context: any thread, any time; pure.
 */
IWARP_EXTERN const char *iwarp_version(void);

#ifdef __cplusplus
}
#endif
#endif
