/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libiwarp: definitions shared by every public header.
 *
 * How the public headers are documented. Every function, and every struct or enum the
 * application uses, has a comment opened with a double star whose first line is
 * "name - summary", then paragraphs (the parameters by name), then for a function these tagged
 * sections, in this order:
 *   Returns:    each value and when it is returned; for an int function 0 and every
 *               IWARP_ERR_* code it can return (errors.h), one per line.
 *   Ownership:  who owns each pointer passed or returned, and for how long the library
 *               borrows it.
 *   Context:    which threads may call it, which lock it takes, whether it blocks, and before
 *               or after which other calls it is allowed.
 * Struct fields are documented by a trailing or preceding comment each.
 *
 * General rules the sections rely on:
 *  - Every function may be called from any thread. Functions on the objects of one context
 *    serialise on the context's lock; blocking waits (iwarp_get_cq_event, iwarp_cq_wait,
 *    iwarp_cm_get_event, iwarp_ctx_progress) wait without it.
 *  - The hooks an application gives a context (iwarp_ctx_attr: allocator, log, rng) may run
 *    with that lock held, in the progress thread or in the caller's: they must not call into
 *    libiwarp. There are no other callbacks.
 *  - An object must not be used by any thread once a call destroying it has returned 0, and
 *    must not be destroyed while another thread uses it.
 */
#ifndef IWARP_COMMON_H
#define IWARP_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Public functions are exported; everything else is built with -fvisibility=hidden. */
#if defined(__GNUC__)
#define IWARP_EXTERN __attribute__((visibility("default")))
#else
#define IWARP_EXTERN
#endif

/* Marks an anonymous struct inside a union: standard C11, a GNU extension in C++, where it
 * keeps -Wpedantic quiet. */
#if defined(__GNUC__)
#define IWARP_ANON_STRUCT __extension__ struct
#else
#define IWARP_ANON_STRUCT struct
#endif

/* A byte count (>= 0) or a negative IWARP_ERR_* code. */
typedef ssize_t iwarp_ssize;

/*
 * Extensible structs.
 *
 * A struct whose storage the application provides (attributes, parameters, query results, async
 * events) ends its base layout with `uint32_t comp_mask`. Later versions append fields after it,
 * each named by one comp_mask bit, so binaries built against an older header keep working.
 *
 * Input structs (the application fills them: iwarp_ctx_attr, iwarp_mem_hooks,
 * iwarp_qp_init_attr, iwarp_srq_init_attr, iwarp_ddp_qp_init_attr, iwarp_mw_bind,
 * iwarp_conn_param): comp_mask names the appended fields the application set. A field whose bit
 * is clear is not read and takes its default, so a zero-initialised struct (or one from
 * iwarp_ctx_attr_default) asks for nothing new. A bit the library does not know makes the call
 * fail with IWARP_ERR_NOTSUP before anything is created or written (only checks that change
 * nothing, such as NULL pointers, may come first), and logs one IWARP_LOG_ERROR line through the
 * context's log hook (for iwarp_ctx_create: the hook in the attributes themselves). The library
 * never changes an input's comp_mask.
 *
 * Output structs (the library fills them: iwarp_device_attr, iwarp_qp_attr, iwarp_async_event,
 * iwarp_ddp_error): the library never reads comp_mask, so they need no initialisation. The call
 * (a static inline wrapper that passes sizeof the caller's struct to the *_sized function) writes
 * the base and each appended field that fits, and sets comp_mask to the bits of the appended
 * fields it wrote; nothing past the caller's size is ever written. In iwarp_cm_event.param the
 * library writes comp_mask 0 (only base fields), so a copy of it may be handed back to
 * iwarp_cm_accept or iwarp_cm_connect as it is.
 *
 * The bits defined in this version: IWARP_CTX_ATTR_TX_BATCH (iwarp_ctx_attr.tx_batch_us),
 * IWARP_CTX_ATTR_LLP_TIMEOUT (iwarp_ctx_attr.llp_timeout_ms),
 * IWARP_CTX_ATTR_MPA_PENDING_MAX (iwarp_ctx_attr.mpa_pending_max),
 * IWARP_CTX_ATTR_MPA_STARTUP_TIMEOUT (iwarp_ctx_attr.mpa_startup_timeout_ms),
 * IWARP_QP_INIT_ATTR_RDMAP_EXT (iwarp_qp_init_attr.rdmap_ext), IWARP_DEVICE_ATTR_RDMAP_EXT,
 * IWARP_DEVICE_ATTR_ATOMIC_CAP and IWARP_DEVICE_ATTR_MAX_ATOMIC (iwarp_device_attr),
 * IWARP_CONN_PARAM_RETRY_REFUSED (iwarp_conn_param.retry_refused_ms). Every other comp_mask
 * is 0.
 *
 * Not extensible this way: work requests, SGEs and work completions (iwarp_send_wr,
 * iwarp_recv_wr, iwarp_ddp_send_wr, iwarp_sge, iwarp_wc) have fixed layouts, as in libibverbs,
 * because they are posted and polled in arrays on the data path; structs embedded by value in
 * another (iwarp_qp_cap, iwarp_srq_attr, iwarp_mw_bind_info) are frozen and grow through the
 * enclosing struct's comp_mask; objects the library allocates (iwarp_mr, iwarp_mw, iwarp_qp,
 * iwarp_comp_channel, iwarp_cm_channel, iwarp_cm_id, iwarp_cm_event) grow at their end, and an
 * application never allocates, copies or embeds them.
 */

#ifdef __cplusplus
}
#endif
#endif
