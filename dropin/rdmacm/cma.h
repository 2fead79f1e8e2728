/* SPDX-License-Identifier: BSD-2-Clause */
/* The drop-in librdmacm's objects: an rdma_event_channel around a libiwarp CM channel, an
 * rdma_cm_id around a libiwarp CM id, an rdma_cm_event around a libiwarp CM event. The public
 * struct comes first in each, so the application's pointer is ours.
 *
 * Errors inside: functions returning int return 0 or -1 with errno set, as librdmacm.
 */
#ifndef IWD_RDMACM_CMA_H
#define IWD_RDMACM_CMA_H

#include <stdbool.h>
#include <stdint.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "dropin.h"

#define IWD_CM_MAX_DEVICES 64 /* devices whose default PD librdmacm-style ids share */

struct iwd_channel {
    struct rdma_event_channel pub; /* first; pub.fd is the libiwarp channel's fd */
    struct iwarp_cm_channel *iw;
};

struct iwd_event;

struct iwd_id {
    struct rdma_cm_id pub; /* first */
    struct iwarp_cm_id *iw;
    bool sync;          /* its channel was made for it: each call waits for its own event */
    bool iw_cm;         /* the kernel would have an iw_cm id: connecting, connected, a request */
    bool listening;     /* rdma_listen succeeded */
    bool was_connected; /* ESTABLISHED was delivered */
    uint8_t req_ird;    /* CONNECT_REQUEST: the IRD/ORD offered, for rdma_accept's defaults */
    uint8_t req_ord;
    struct ibv_qp *user_qp;                /* the application's QP attached by qp_num */
    struct iwd_event *req_event;           /* its CONNECT_REQUEST, until acknowledged */
    struct ibv_qp_init_attr *qp_init_attr; /* rdma_create_ep listener: rdma_get_request's QP */
};

struct iwd_event {
    struct rdma_cm_event pub;  /* first */
    struct iwarp_cm_event *iw; /* NULL once released early (its id was destroyed) */
    uint8_t private_data[255]; /* pub.param.conn.private_data: the event's own copy */
};

static inline struct iwd_id *iwd_id_of(struct rdma_cm_id *id)
{
    return (struct iwd_id *)id;
}

static inline struct iwd_channel *iwd_channel_of(struct rdma_event_channel *ch)
{
    return (struct iwd_channel *)ch;
}

/**
 * iwd_cm_fail - set errno to err and return -1 (librdmacm's ERR()).
 */
int iwd_cm_fail(int err);

/**
 * iwd_cm_errno - the errno for a libiwarp CM call's error (negative IWARP_ERR_*): STATE is
 * EINVAL as the kernel's rdma_cm says for a call in the wrong state, ADDR EADDRINUSE,
 * BUSY EBUSY, the rest as iwd_errno.
 */
int iwd_cm_errno(int iwarp_err);

/**
 * iwd_cm_status - an event's status as librdmacm over iWARP reports it: 0, or a negative errno
 * (-ECONNREFUSED for a rejected or refused connection, -ECONNRESET for a reset, -ETIMEDOUT for
 * an unreachable peer).
 */
int iwd_cm_status(int iwarp_status);

/**
 * iwd_cm_channel_new - rdma_create_event_channel's work. NULL with errno on failure.
 */
struct iwd_channel *iwd_cm_channel_new(void);

/**
 * iwd_cm_channel_free - destroy a channel made by iwd_cm_channel_new (no id may remain).
 */
void iwd_cm_channel_free(struct iwd_channel *ch);

/**
 * iwd_cm_id_new - a new id around iw (NULL: a new libiwarp id is made) on ch (NULL: a channel
 * of its own, synchronous mode). Returns the id, or NULL with errno.
 */
struct iwd_id *iwd_cm_id_new(struct iwd_channel *ch, struct iwarp_cm_id *iw, void *context,
                             enum rdma_port_space ps, enum ibv_qp_type qp_type);

/**
 * iwd_cm_sync_wait - synchronous mode (librdmacm's ucma_complete): ack the id's previous event,
 * wait for its next one and keep it in id->pub.event. 0 at once for an asynchronous id; -1 with
 * errno from the event's status (a REJECTED one: ECONNREFUSED).
 */
int iwd_cm_sync_wait(struct iwd_id *id);

/**
 * iwd_cm_copy_addr - copy the socket address sa (family AF_INET or AF_INET6; others: zeroed)
 * into dst.
 */
void iwd_cm_copy_addr(struct sockaddr_storage *dst, const struct sockaddr *sa);

/**
 * iwd_cm_set_verbs - point id->pub.verbs at the device owning the local address addr, if
 * there is one and it is not a wildcard; port_num becomes 1. Returns whether it did.
 */
bool iwd_cm_set_verbs(struct iwd_id *id, const struct sockaddr *addr);

/**
 * iwd_cm_use_device - the id is on device verbs (port 1); its pd becomes the device's default
 * PD unless it has one, as librdmacm.
 */
void iwd_cm_use_device(struct iwd_id *id, struct ibv_context *verbs);

/**
 * iwd_cm_qp_state - record state on the id's QP (its own or the attached one), if any.
 */
void iwd_cm_qp_state(struct iwd_id *id, enum ibv_qp_state state);

/**
 * iwd_cm_destroy_cqs - destroy the CQs and completion channels librdmacm made for the id.
 */
void iwd_cm_destroy_cqs(struct rdma_cm_id *id);

#endif /* IWD_RDMACM_CMA_H */
