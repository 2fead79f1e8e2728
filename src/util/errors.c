/* SPDX-License-Identifier: BSD-2-Clause */
/* iwarp_strerror / iwarp_err_name: generated from IWARP_ERRNO_MAP. */
#include "iwarp/errors.h"

const char *iwarp_strerror(int err)
{
    switch (err) {
    case 0:
        return "success";
#define IWARP_ERR_MSG(name, value, msg) \
    case value:                         \
        return msg;
        IWARP_ERRNO_MAP(IWARP_ERR_MSG)
#undef IWARP_ERR_MSG
    default:
        return "unknown error";
    }
}

const char *iwarp_err_name(int err)
{
    switch (err) {
    case 0:
        return "IWARP_OK";
#define IWARP_ERR_NAME(name, value, msg) \
    case value:                          \
        return "IWARP_ERR_" #name;
        IWARP_ERRNO_MAP(IWARP_ERR_NAME)
#undef IWARP_ERR_NAME
    default:
        return "IWARP_ERR_UNKNOWN";
    }
}
