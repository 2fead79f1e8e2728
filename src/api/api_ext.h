/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Extensible public structs (docs/design.md, "Extensible structs"): what every public entry point
 * does with a struct whose storage the application provides, so that later versions can append
 * fields without breaking binaries built against an older header.
 *
 * The base layout of such a struct ends with `uint32_t comp_mask`; fields added later follow it,
 * one comp_mask bit each.
 *  - Input (the caller fills it): the library reads the base, and a later field only when its
 *    bit is set. A bit this version does not know is refused (IWARP_ERR_NOTSUP, logged) before
 *    anything else is done. The library never changes an input's comp_mask.
 *  - Output (the library fills it): the caller's size comes from the header (its static inline
 *    wrapper passes sizeof); the library writes the base and each later field that fits, and sets
 *    comp_mask to the bits of the later fields it wrote. It never reads an output's comp_mask, so
 *    uninitialised structs, as verbs code passes them, are fine.
 * Whole-struct copies in or out therefore go through IWARP_API_EXT_BASE, never `*dst = *src`.
 */
#ifndef IWARP_API_API_EXT_H
#define IWARP_API_API_EXT_H

#include <stddef.h>
#include <stdint.h>

#include "iwarp/verbs.h"

/* Octets of a public struct's base layout: its fields up to and including comp_mask. */
#define IWARP_API_EXT_BASE(type) (offsetof(type, comp_mask) + sizeof(((type *)0)->comp_mask))

/* The comp_mask bits this version knows, per input struct. A version that appends a field adds
 * its bit here and reads the field only when the bit is set. */
#define IWARP_API_KNOWN_iwarp_ctx_attr                                                       \
    (IWARP_CTX_ATTR_TX_BATCH | IWARP_CTX_ATTR_LLP_TIMEOUT | IWARP_CTX_ATTR_MPA_PENDING_MAX | \
     IWARP_CTX_ATTR_MPA_STARTUP_TIMEOUT)
#define IWARP_API_KNOWN_iwarp_mem_hooks        0u
#define IWARP_API_KNOWN_iwarp_qp_init_attr     IWARP_QP_INIT_ATTR_RDMAP_EXT
#define IWARP_API_KNOWN_iwarp_srq_init_attr    0u
#define IWARP_API_KNOWN_iwarp_mw_bind          0u
#define IWARP_API_KNOWN_iwarp_conn_param       IWARP_CONN_PARAM_RETRY_REFUSED
#define IWARP_API_KNOWN_iwarp_ddp_qp_init_attr 0u

/*
 * Checks an input struct's comp_mask: 0 when every bit set is in known; else logs one
 * IWARP_LOG_ERROR line through log's hook (log->log, log_user, log_level; nothing when it has
 * none) naming fn, the struct and the unknown bits, and returns IWARP_ERR_NOTSUP.
 * Ownership: nothing is kept. Any thread, with or without ctx->lock (it only logs).
 */
int iwarp_api_ext_in(const struct iwarp_ctx_attr *log, const char *fn, const char *type,
                     uint32_t comp_mask, uint32_t known);

/* iwarp_api_ext_in for the struct of type `type` at p (non-NULL), on behalf of the calling
 * public function, logging through the context attributes log. */
#define IWARP_API_EXT_IN(log, type, p) \
    iwarp_api_ext_in((log), __func__, #type, (p)->comp_mask, IWARP_API_KNOWN_##type)

/* Whether an output struct of type `type` whose caller has size octets has room for its base. */
#define IWARP_API_EXT_ROOM(type, size) ((size) >= IWARP_API_EXT_BASE(type))

/* One comp_mask bit's appended field(s) of an extensible struct: the octets [off, end) they
 * take. A struct's are listed in the order they were appended (rising offsets). */
struct iwarp_api_ext_field {
    size_t off;
    size_t end;
    uint32_t bit;
};

/* The iwarp_api_ext_field of bit for the fields first .. last of struct type `type`, and for
 * its one field `field`. */
#define IWARP_API_EXT_FIELDS(type, first, last, bit)                                   \
    {                                                                                  \
        offsetof(type, first), offsetof(type, last) + sizeof(((type *)0)->last), (bit) \
    }
#define IWARP_API_EXT_FIELD(type, field, bit) IWARP_API_EXT_FIELDS(type, field, field, bit)

/*
 * Input side: copies into dst, from the caller's struct src (both of the type fields[0..n)
 * describe), the appended fields whose bit comp_mask (src's, already checked by
 * iwarp_api_ext_in) has; dst keeps what it holds in the others (their defaults).
 * Ownership: nothing is kept. Any thread.
 */
void iwarp_api_ext_read(void *dst, const void *src, uint32_t comp_mask,
                        const struct iwarp_api_ext_field *fields, size_t n);

/*
 * Output side: how many octets of a struct to write to a caller's struct of size octets (at
 * least its base, base octets): the base and, in order, each of fields[0..n) that fits whole.
 * Sets *comp_mask to the bits of those fields.
 * Ownership: nothing is kept. Any thread.
 */
size_t iwarp_api_ext_fit(size_t base, size_t size, const struct iwarp_api_ext_field *fields,
                         size_t n, uint32_t *comp_mask);

#endif
