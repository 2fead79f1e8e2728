/* SPDX-License-Identifier: BSD-2-Clause */
/* What the drop-in librdmacm.so.1 needs from the drop-in libibverbs.so.1.
 *
 * The two libraries replace rdma-core's for the processes that ask for them (iwarp exec, or
 * LD_LIBRARY_PATH). Like rdma-core's pair, librdmacm builds on libibverbs; these functions are
 * exported under the version node IWARP_DROPIN_PRIVATE, which no application uses.
 *
 * One libiwarp context serves the whole process: every device context (ibv_open_device), every
 * CM event channel and every object made from them live in it, so a CQ, PD or QP of one device
 * context may be used with an id of any other, as on a kernel device. Its settings come from
 * the environment once, at first use (iwd_options).
 *
 * Errors: functions returning int return 0 or a positive errno value; functions returning a
 * pointer return NULL and set errno.
 */
#ifndef IWARP_DROPIN_H
#define IWARP_DROPIN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>

#include "iwarp/cm.h"
#include "iwarp/verbs.h"

#define IWD_EXPORT __attribute__((visibility("default")))

/**
 * struct iwd_options - the process's settings, from environment variables (documented in
 * docs/dropin.md), read once. A value that does not parse is reported on stderr (one line
 * naming the variable) and its default is used.
 */
struct iwd_options {
    enum iwarp_progress_mode progress; /* IWARP_PROGRESS=thread|caller; default thread */
    bool mpa_crc;                      /* IWARP_MPA_CRC=0|1; default 0 */
    bool mpa_markers;                  /* IWARP_MPA_MARKERS=0|1; default 0 */
    uint8_t mpa_rev;                   /* IWARP_MPA_REV=1|2; default 2 */
    bool peer_to_peer;                 /* IWARP_MPA_P2P=0|1; default 1 (0 with revision 1) */
    uint8_t rtr_types;                 /* IWARP_MPA_RTR=write,read,send (IWARP_CM_RTR_*); 0: all */
    uint16_t first_fpdu_delay_ms;      /* IWARP_FIRST_FPDU_DELAY_MS; default 0 */
    int log_level;   /* IWARP_LOG=level[:file], level error|warn|info|debug|0-3|off; default warn
                      * (off: -1) */
    bool log_file;   /* IWARP_LOG names a file: libiwarp writes its lines there itself */
    int tx_batch_us; /* IWARP_TX_BATCH_US (iwarp_ctx_attr.tx_batch_us; 0: off); -1: libiwarp's */
    /* IWARP_CONNECT_RETRY_MS (0 ... 3600000; default 0): a connector refused, or closed before
     * the MPA Reply, dials again for this long (iwarp_conn_param.retry_refused_ms) */
    uint32_t connect_retry_ms;
    /* IWARP_MPA_PENDING_MAX (0 ... 1000000; iwarp_ctx_attr.mpa_pending_max) and
     * IWARP_MPA_STARTUP_TIMEOUT_MS (0 ... 3600000; .mpa_startup_timeout_ms); -1: libiwarp's */
    int64_t mpa_pending_max;
    int64_t mpa_startup_timeout_ms;
};

/**
 * iwd_options - the process's settings (read from the environment on the first call).
 * Returns: never NULL; the struct is the library's.
 */
IWD_EXPORT const struct iwd_options *iwd_options(void);

/**
 * iwd_ctx_get / iwd_ctx_put - the process's libiwarp context, created on the first get (from
 * iwd_options) and destroyed when the last reference is put. Returns NULL with errno set when
 * it cannot be created.
 */
IWD_EXPORT struct iwarp_ctx *iwd_ctx_get(void);
IWD_EXPORT void iwd_ctx_put(void);

/**
 * iwd_errno - the errno value for a libiwarp error code (negative IWARP_ERR_*; 0 gives 0).
 */
IWD_EXPORT int iwd_errno(int iwarp_err);

/**
 * iwd_context_for_addr - the device context of the interface that owns the local address addr
 * (a wildcard or unknown address: NULL with errno ENODEV), as librdmacm sets rdma_cm_id.verbs.
 * The context is opened on first use and stays open for the life of the process (librdmacm
 * does the same with every device); never close it.
 */
IWD_EXPORT struct ibv_context *iwd_context_for_addr(const struct sockaddr *addr);

/**
 * iwd_contexts - every device's context, opened as iwd_context_for_addr does, in the order of
 * ibv_get_device_list; *count is their number. For rdma_get_devices. NULL with errno on error.
 * The NULL-terminated array is the library's (copy it; never free it).
 */
IWD_EXPORT struct ibv_context **iwd_contexts(int *count);

/* The libiwarp object behind a verbs object made by this library (never NULL for one of ours). */
IWD_EXPORT struct iwarp_pd *iwd_pd(struct ibv_pd *pd);
IWD_EXPORT struct iwarp_cq *iwd_cq(struct ibv_cq *cq);
IWD_EXPORT struct iwarp_srq *iwd_srq(struct ibv_srq *srq);
IWD_EXPORT struct iwarp_qp *iwd_qp(struct ibv_qp *qp);

/**
 * iwd_create_qp_with - ibv_create_qp, except that create (the CM: iwarp_cm_create_qp on an id)
 * makes the libiwarp QP from the converted attributes. attr->cap is updated as ibv_create_qp
 * does. Returns the new ibv_qp, or NULL with errno (create's negative IWARP_ERR_* converted).
 * The QP is destroyed with ibv_destroy_qp.
 */
typedef int (*iwd_qp_create_fn)(void *arg, struct iwarp_pd *pd, struct iwarp_qp_init_attr *attr,
                                struct iwarp_qp **qp);
IWD_EXPORT struct ibv_qp *iwd_create_qp_with(struct ibv_pd *pd, struct ibv_qp_init_attr *attr,
                                             iwd_qp_create_fn create, void *arg);

/**
 * iwd_qp_set_state - record the verbs state of a QP whose connection the CM moved (RTS when
 * established, ERR when it ended), so that ibv_query_qp reports it.
 */
IWD_EXPORT void iwd_qp_set_state(struct ibv_qp *qp, enum ibv_qp_state state);

/**
 * iwd_qp_by_num - the QP of this process with QP number qp_num (rdma_connect/rdma_accept with a
 * QP the application made itself and named in rdma_conn_param.qp_num); NULL if none.
 */
IWD_EXPORT struct ibv_qp *iwd_qp_by_num(uint32_t qp_num);

/**
 * iwd_log - one line on stderr, prefixed "libiwarp: ", when level is at or below the
 * IWARP_LOG level.
 */
IWD_EXPORT void iwd_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* IWARP_DROPIN_H */
