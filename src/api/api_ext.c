/* SPDX-License-Identifier: BSD-2-Clause */
/* Extensible public structs: the comp_mask check every entry point makes, and the appended
 * fields read in and written out (api_ext.h). */
#include "api/api_ext.h"

#include <string.h>

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

void iwarp_api_ext_read(void *dst, const void *src, uint32_t comp_mask,
                        const struct iwarp_api_ext_field *fields, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (comp_mask & fields[i].bit)
            memcpy((char *)dst + fields[i].off, (const char *)src + fields[i].off,
                   fields[i].end - fields[i].off);
}

size_t iwarp_api_ext_fit(size_t base, size_t size, const struct iwarp_api_ext_field *fields,
                         size_t n, uint32_t *comp_mask)
{
    size_t len = base;
    *comp_mask = 0;
    for (size_t i = 0; i < n && fields[i].end <= size; i++) {
        *comp_mask |= fields[i].bit;
        len = fields[i].end;
    }
    return len;
}
