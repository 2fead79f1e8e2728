/* SPDX-License-Identifier: BSD-2-Clause */
/* iwarp_version: the run-time version string. */
#include "iwarp/iwarp.h"

const char *iwarp_version(void)
{
    return IWARP_VERSION_STRING;
}
