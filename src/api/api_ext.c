/* SPDX-License-Identifier: BSD-2-Clause */
/* Extensible public structs: the comp_mask check every entry point makes (api_ext.h). */
#include "api/api_ext.h"

#include "api/api_internal.h"
#include "iwarp/errors.h"
#include "iwarp/version.h"

int iwarp_api_ext_in(const struct iwarp_ctx_attr *log, const char *fn, const char *type,
                     uint32_t comp_mask, uint32_t known)
{
    uint32_t unknown = comp_mask & ~known;
    if (unknown == 0)
        return 0;
    iwarp_api_log_attr(log, IWARP_LOG_ERROR,
                       "%s: struct %s has comp_mask 0x%08x; bits 0x%08x name fields libiwarp %s "
                       "does not have (zero-initialise the struct, or set only the bits of "
                       "fields this version documents): %s",
                       fn, type, comp_mask, unknown, IWARP_VERSION_STRING,
                       iwarp_err_name(IWARP_ERR_NOTSUP));
    return IWARP_ERR_NOTSUP;
}
