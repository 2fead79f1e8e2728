/* SPDX-License-Identifier: BSD-2-Clause */
/* Connections: rdma_connect, rdma_accept, rdma_reject, rdma_disconnect, rdma_establish,
 * rdma_get_request, rdma_notify, rdma_init_qp_attr and the ECE calls. rdma_conn_param becomes
 * iwarp_conn_param with the MPA options of the environment (iwd_options). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <string.h>

#include "cma.h"
#include "iwarp/errors.h"

/* The MPA options every connection of the process uses. */
static void mpa_options(struct iwarp_conn_param *p, bool connector)
{
    const struct iwd_options *o = iwd_options();
    p->mpa_rev = o->mpa_rev;
    p->crc = o->mpa_crc;
    p->markers = o->mpa_markers;
    p->rtr_types = o->rtr_types;
    if (connector) {
        p->peer_to_peer = o->peer_to_peer;
        p->first_fpdu_delay_ms = o->first_fpdu_delay_ms;
        p->markers_fallback = o->mpa_markers;
        if (o->connect_retry_ms) { /* IWARP_CONNECT_RETRY_MS */
            p->comp_mask |= IWARP_CONN_PARAM_RETRY_REFUSED;
            p->retry_refused_ms = o->connect_retry_ms;
        }
    }
}

/* conn_param -> iwarp_conn_param. ird/ord: what RDMA_MAX_RESP_RES / RDMA_MAX_INIT_DEPTH (or
 * no conn_param) stand for. */
static void to_iw(const struct rdma_conn_param *c, uint8_t ird, uint8_t ord,
                  struct iwarp_conn_param *p)
{
    memset(p, 0, sizeof *p);
    p->responder_resources = ird;
    p->initiator_depth = ord;
    if (c) {
        p->private_data = c->private_data;
        p->private_data_len = c->private_data ? c->private_data_len : 0;
        if (c->responder_resources != RDMA_MAX_RESP_RES)
            p->responder_resources = c->responder_resources;
        if (c->initiator_depth != RDMA_MAX_INIT_DEPTH)
            p->initiator_depth = c->initiator_depth;
    }
}

/* The application's own QP named by qp_num (rping -q): the kernel's iw_cm looks it up by
 * number and connects it; an unknown number is EINVAL there too. */
static int attach_user_qp(struct iwd_id *id, const struct rdma_conn_param *c)
{
    if (id->pub.qp || id->iw->qp)
        return 0;
    if (!c)
        return iwd_cm_fail(EINVAL); /* librdmacm's ucma_valid_param: no QP, no param */
    struct ibv_qp *qp = iwd_qp_by_num(c->qp_num);
    if (!qp)
        return iwd_cm_fail(EINVAL);
    int rc = iwarp_cm_attach_qp(id->iw, iwd_qp(qp));
    if (rc != 0)
        return iwd_cm_fail(iwd_cm_errno(rc));
    id->user_qp = qp;
    return 0;
}

/* Undo attach_user_qp when the call that needed it failed. */
static void detach_user_qp(struct iwd_id *id)
{
    if (id->user_qp) {
        iwarp_cm_attach_qp(id->iw, NULL);
        id->user_qp = NULL;
    }
}

/* rdma_connect and rdma_accept: the user's QP (if any) attached, the parameters converted with
 * the default IRD/ORD, the MPA options of the environment, then libiwarp's call (connect or
 * accept); synchronous ids wait for the event that follows. */
static int start_connection(struct rdma_cm_id *pub, struct rdma_conn_param *conn_param,
                            bool connector)
{
    if (!pub)
        return iwd_cm_fail(EINVAL);
    struct iwd_id *id = iwd_id_of(pub);
    if (pub->qp_type != IBV_QPT_RC)
        return iwd_cm_fail(EOPNOTSUPP);
    if (attach_user_qp(id, conn_param) != 0)
        return -1;
    struct iwarp_conn_param p;
    /* librdmacm: a connector offers the maximum; an acceptor what the request offered, within
     * the device's (libiwarp clips to it) */
    if (connector)
        to_iw(conn_param, RDMA_MAX_RESP_RES, RDMA_MAX_INIT_DEPTH, &p);
    else
        to_iw(conn_param, id->req_ird, id->req_ord, &p);
    mpa_options(&p, connector);
    int rc = connector ? iwarp_cm_connect(id->iw, &p) : iwarp_cm_accept(id->iw, &p);
    if (rc != 0) {
        detach_user_qp(id);
        return iwd_cm_fail(iwd_cm_errno(rc));
    }
    if (connector)
        id->iw_cm = true;
    return iwd_cm_sync_wait(id);
}

/** rdma_connect - connect the resolved id (an event follows; synchronous: waits for it). */
IWD_EXPORT int rdma_connect(struct rdma_cm_id *pub, struct rdma_conn_param *conn_param)
{
    return start_connection(pub, conn_param, true);
}

/** rdma_accept - accept a CONNECT_REQUEST's id (synchronous: waits for ESTABLISHED). */
IWD_EXPORT int rdma_accept(struct rdma_cm_id *pub, struct rdma_conn_param *conn_param)
{
    return start_connection(pub, conn_param, false);
}

/** rdma_reject - refuse a CONNECT_REQUEST's id with private data (MPA Reply, Reject bit). */
IWD_EXPORT int rdma_reject(struct rdma_cm_id *pub, const void *private_data,
                           uint8_t private_data_len)
{
    if (!pub)
        return iwd_cm_fail(EINVAL);
    int rc = iwarp_cm_reject(iwd_id_of(pub)->iw, private_data, private_data ? private_data_len : 0);
    return rc == 0 ? 0 : iwd_cm_fail(iwd_cm_errno(rc));
}

/** rdma_reject_ece - rdma_reject: iWARP carries no ECE reason; the reject is the same. */
IWD_EXPORT int rdma_reject_ece(struct rdma_cm_id *pub, const void *private_data,
                               uint8_t private_data_len)
{
    return rdma_reject(pub, private_data, private_data_len);
}

/** rdma_disconnect - close the connection (DISCONNECTED follows; synchronous: waits). */
IWD_EXPORT int rdma_disconnect(struct rdma_cm_id *pub)
{
    if (!pub)
        return iwd_cm_fail(EINVAL);
    struct iwd_id *id = iwd_id_of(pub);
    int rc = iwarp_cm_disconnect(id->iw);
    if (rc == IWARP_ERR_STATE && id->was_connected)
        return 0; /* the peer closed first: iw_cm answers 0 (CLOSING or IDLE) */
    if (rc != 0)
        return iwd_cm_fail(iwd_cm_errno(rc));
    return iwd_cm_sync_wait(id);
}

/** rdma_establish - completes IB's CONNECT_RESPONSE for an id without a QP (librdmacm: EINVAL
 * with one). iWARP has no such step: the MPA exchange established the connection, so it is 0
 * once ESTABLISHED was delivered (rping -q calls it then), EINVAL before. */
IWD_EXPORT int rdma_establish(struct rdma_cm_id *pub)
{
    if (!pub || pub->qp || !iwd_id_of(pub)->was_connected)
        return iwd_cm_fail(EINVAL);
    return 0;
}

/** rdma_get_request - a synchronous listener's next connection request (with its QP when the
 * listener came from rdma_create_ep with QP attributes). */
IWD_EXPORT int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
    if (!listen || !id)
        return iwd_cm_fail(EINVAL);
    struct iwd_id *lis = iwd_id_of(listen);
    if (!lis->sync)
        return iwd_cm_fail(EINVAL);
    if (listen->event) {
        rdma_ack_cm_event(listen->event);
        listen->event = NULL;
    }
    struct rdma_cm_event *ev;
    if (rdma_get_cm_event(listen->channel, &ev) != 0)
        return -1;
    int err = 0;
    if (ev->event == RDMA_CM_EVENT_REJECTED)
        err = ECONNREFUSED;
    else if (ev->status)
        err = -ev->status;
    else if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST)
        err = EINVAL;
    if (!err && lis->qp_init_attr) {
        struct ibv_qp_init_attr attr = *lis->qp_init_attr;
        if (rdma_create_qp(ev->id, listen->pd, &attr) != 0)
            err = errno;
    }
    if (err) {
        rdma_ack_cm_event(ev);
        return iwd_cm_fail(err);
    }
    *id = ev->id;
    ev->id->event = ev;
    return 0;
}

/** rdma_notify - the kernel passes it to IB's CM only: 0 on iWARP once connecting, else
 * EINVAL (no CM id yet). */
IWD_EXPORT int rdma_notify(struct rdma_cm_id *pub, enum ibv_event_type event)
{
    (void)event;
    if (!pub || !iwd_id_of(pub)->iw_cm)
        return iwd_cm_fail(EINVAL);
    return 0;
}

/** rdma_init_qp_attr - the attributes to move a QP the application made, as the kernel's
 * rdma_init_qp_attr over iw_cm: INIT/RTR get remote read and write access once the id
 * connects (0 before), RTS nothing but the port; port_num always. */
IWD_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *pub, struct ibv_qp_attr *qp_attr,
                                 int *qp_attr_mask)
{
    if (!pub || !qp_attr || !qp_attr_mask)
        return iwd_cm_fail(EINVAL);
    struct iwd_id *id = iwd_id_of(pub);
    if (!id->iw_cm) {
        qp_attr->qp_access_flags = 0;
        *qp_attr_mask = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS;
    } else if (id->listening) {
        return iwd_cm_fail(EINVAL);
    } else if (qp_attr->qp_state == IBV_QPS_INIT || qp_attr->qp_state == IBV_QPS_RTR) {
        qp_attr->qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
        *qp_attr_mask = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS;
    } else if (qp_attr->qp_state == IBV_QPS_RTS) {
        *qp_attr_mask = 0;
    } else {
        return iwd_cm_fail(EINVAL);
    }
    qp_attr->port_num = pub->port_num ? pub->port_num : 1;
    *qp_attr_mask |= IBV_QP_PORT;
    return 0;
}

/** rdma_set_local_ece - kept for the connection as librdmacm does; iWARP QPs have no ECE,
 * so nothing is negotiated. */
IWD_EXPORT int rdma_set_local_ece(struct rdma_cm_id *pub, struct ibv_ece *ece)
{
    if (!pub || pub->qp || !ece || !ece->vendor_id || ece->comp_mask)
        return iwd_cm_fail(EINVAL);
    return 0;
}

/** rdma_get_remote_ece - the peer's ECE: none over iWARP (vendor_id 0), as librdmacm gives. */
IWD_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *pub, struct ibv_ece *ece)
{
    if (!pub || pub->qp || !ece)
        return iwd_cm_fail(EINVAL);
    memset(ece, 0, sizeof *ece);
    return 0;
}
