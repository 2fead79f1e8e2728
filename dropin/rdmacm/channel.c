/* SPDX-License-Identifier: BSD-2-Clause */
/* Event channels and events: rdma_create/destroy_event_channel, rdma_get_cm_event,
 * rdma_ack_cm_event, rdma_event_str, and synchronous mode's wait (librdmacm's ucma_complete).
 * An rdma_cm_event wraps the libiwarp event it came from; its private data points into that
 * event, valid until the ack, as in librdmacm. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cma.h"
#include "iwarp/errors.h"

int iwd_cm_fail(int err)
{
    errno = err;
    return -1;
}

int iwd_cm_errno(int iwarp_err)
{
    switch (iwarp_err) {
    case IWARP_ERR_STATE:
        return EINVAL;
    case IWARP_ERR_ADDR:
        return EADDRINUSE;
    case IWARP_ERR_BUSY:
        return EBUSY;
    case IWARP_ERR_NOTSUP:
        return EOPNOTSUPP;
    default: {
        int e = iwd_errno(iwarp_err);
        return e ? e : EIO;
    }
    }
}

int iwd_cm_status(int iwarp_status)
{
    switch (iwarp_status) {
    case 0:
        return 0;
    case IWARP_ERR_MPA_REJECTED:
    case IWARP_ERR_CONN_REFUSED:
    case IWARP_ERR_SESSION_REJECTED:
    case IWARP_ERR_MPA_MARKERS:
        return -ECONNREFUSED;
    case IWARP_ERR_CONN_RESET:
    case IWARP_ERR_SESSION_TERMINATED:
        return -ECONNRESET;
    case IWARP_ERR_TIMEDOUT:
    case IWARP_ERR_UNREACHABLE:
        return -ETIMEDOUT;
    default:
        return -iwd_cm_errno(iwarp_status);
    }
}

struct iwd_channel *iwd_cm_channel_new(void)
{
    struct iwarp_ctx *ctx = iwd_ctx_get();
    if (!ctx)
        return NULL;
    struct iwd_channel *ch = calloc(1, sizeof *ch);
    if (!ch) {
        iwd_ctx_put();
        errno = ENOMEM;
        return NULL;
    }
    int rc = iwarp_cm_create_channel(ctx, &ch->iw);
    if (rc != 0) {
        free(ch);
        iwd_ctx_put();
        errno = iwd_cm_errno(rc);
        return NULL;
    }
    ch->pub.fd = ch->iw->fd;
    return ch;
}

void iwd_cm_channel_free(struct iwd_channel *ch)
{
    int rc = iwarp_cm_destroy_channel(ch->iw);
    if (rc != 0) {
        /* ids remain on it: librdmacm would close the fd under them; we keep it alive */
        iwd_log(IWARP_LOG_WARN, "rdma_destroy_event_channel: ids remain on the channel (%s)",
                iwarp_strerror(rc));
        return;
    }
    free(ch);
    iwd_ctx_put();
}

/** rdma_create_event_channel - open a channel for CM events (pub.fd is pollable). */
IWD_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
    struct iwd_channel *ch = iwd_cm_channel_new();
    return ch ? &ch->pub : NULL;
}

/** rdma_destroy_event_channel - close a channel; every id on it must be destroyed first. */
IWD_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
    if (channel)
        iwd_cm_channel_free(iwd_channel_of(channel));
}

/* A CONNECT_REQUEST's new id: librdmacm's ucma_process_conn_req. Returns NULL with errno. */
static struct iwd_id *request_id(struct iwarp_cm_event *iwev, struct iwd_id *lis)
{
    struct iwd_id *id = iwd_cm_id_new(iwd_channel_of(lis->pub.channel), iwev->id, lis->pub.context,
                                      lis->pub.ps, lis->pub.qp_type);
    if (!id)
        return NULL;
    if (lis->sync) {
        /* a synchronous listener's requests get channels of their own */
        if (rdma_migrate_id(&id->pub, NULL) != 0) {
            int e = errno;
            iwev->id->context_user = NULL;
            free(id);
            errno = e;
            return NULL;
        }
    }
    id->iw_cm = true;
    id->req_ird = iwev->param.responder_resources;
    id->req_ord = iwev->param.initiator_depth;
    iwd_cm_copy_addr(&id->pub.route.addr.src_storage, (struct sockaddr *)&iwev->id->local_addr);
    iwd_cm_copy_addr(&id->pub.route.addr.dst_storage, (struct sockaddr *)&iwev->id->peer_addr);
    if (!iwd_cm_set_verbs(id, (struct sockaddr *)&iwev->id->local_addr) && lis->pub.verbs)
        iwd_cm_use_device(id, lis->pub.verbs);
    return id;
}

/* What the event means for its id and QP, as librdmacm and the kernel's iw_cm do it. */
static void apply(struct iwd_id *id, const struct iwarp_cm_event *iwev)
{
    switch (iwev->event) {
    case IWARP_CM_EVENT_ESTABLISHED:
        id->was_connected = true;
        iwd_cm_copy_addr(&id->pub.route.addr.src_storage, (struct sockaddr *)&id->iw->local_addr);
        iwd_cm_copy_addr(&id->pub.route.addr.dst_storage, (struct sockaddr *)&id->iw->peer_addr);
        iwd_cm_qp_state(id, IBV_QPS_RTS);
        break;
    case IWARP_CM_EVENT_DISCONNECTED:
    case IWARP_CM_EVENT_REJECTED:
    case IWARP_CM_EVENT_UNREACHABLE:
    case IWARP_CM_EVENT_CONNECT_ERROR:
        iwd_cm_qp_state(id, IBV_QPS_ERR);
        break;
    default:
        break;
    }
}

/** rdma_get_cm_event - the channel's next event (blocks unless the fd is O_NONBLOCK: EAGAIN). */
IWD_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
    if (!channel || !event)
        return iwd_cm_fail(EINVAL);
    struct iwd_channel *ch = iwd_channel_of(channel);
    struct iwarp_cm_event *iwev;
    int rc;
    do
        rc = iwarp_cm_get_event(ch->iw, &iwev);
    while (rc == IWARP_ERR_IO && errno == EINTR);
    if (rc == IWARP_ERR_BUSY)
        return iwd_cm_fail(EAGAIN);
    if (rc != 0)
        return iwd_cm_fail(iwd_cm_errno(rc));
    struct iwd_event *ev = calloc(1, sizeof *ev);
    struct iwd_id *id = iwev->id->context_user;
    struct iwd_id *lis = NULL;
    if (ev && iwev->event == IWARP_CM_EVENT_CONNECT_REQUEST && iwev->listen_id) {
        lis = iwev->listen_id->context_user;
        id = request_id(iwev, lis);
    }
    if (!ev || !id) {
        int e = ev ? errno : ENOMEM;
        if (iwev->event == IWARP_CM_EVENT_CONNECT_REQUEST && iwev->listen_id) {
            /* nobody can answer it: refuse, as the kernel does when librdmacm cannot */
            struct iwarp_cm_id *nid = iwev->id;
            iwarp_cm_reject(nid, NULL, 0);
            iwarp_cm_ack_event(iwev);
            iwarp_cm_destroy_id(nid);
        } else {
            iwarp_cm_ack_event(iwev);
        }
        free(ev);
        return iwd_cm_fail(e);
    }
    ev->iw = iwev;
    ev->pub.id = &id->pub;
    ev->pub.listen_id = lis ? &lis->pub : NULL;
    ev->pub.event = (enum rdma_cm_event_type)iwev->event; /* same numbering */
    ev->pub.status = iwd_cm_status(iwev->status);
    struct rdma_conn_param *c = &ev->pub.param.conn;
    /* rdma_conn_param's length is one octet; MPA's private data can be longer. A copy, so that
     * the event outlives its id (destroying a request's id before acking the request is
     * allowed, as in librdmacm, where the request is the listener's event). */
    c->private_data_len = (uint8_t)(iwev->param.private_data_len > sizeof ev->private_data
                                        ? sizeof ev->private_data
                                        : iwev->param.private_data_len);
    if (c->private_data_len) {
        memcpy(ev->private_data, iwev->param.private_data, c->private_data_len);
        c->private_data = ev->private_data;
    }
    c->responder_resources = iwev->param.responder_resources;
    c->initiator_depth = iwev->param.initiator_depth;
    c->qp_num = 0;
    apply(id, iwev);
    if (lis)
        id->req_event = ev;
    *event = &ev->pub;
    return 0;
}

/** rdma_ack_cm_event - release an event (its private data goes with it). */
IWD_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
    if (!event)
        return iwd_cm_fail(EINVAL);
    struct iwd_event *ev = (struct iwd_event *)event;
    if (ev->iw) {
        struct iwd_id *id = iwd_id_of(ev->pub.id); /* alive: its destroy clears ev->iw */
        int rc = iwarp_cm_ack_event(ev->iw);
        if (rc != 0)
            return iwd_cm_fail(iwd_cm_errno(rc));
        if (id->req_event == ev)
            id->req_event = NULL;
    }
    free(ev);
    return 0;
}

int iwd_cm_sync_wait(struct iwd_id *id)
{
    if (!id->sync)
        return 0;
    if (id->pub.event) {
        rdma_ack_cm_event(id->pub.event);
        id->pub.event = NULL;
    }
    if (rdma_get_cm_event(id->pub.channel, &id->pub.event) != 0)
        return -1;
    int status = id->pub.event->status;
    if (!status)
        return 0;
    if (id->pub.event->event == RDMA_CM_EVENT_REJECTED)
        return iwd_cm_fail(ECONNREFUSED);
    return iwd_cm_fail(status < 0 ? -status : status);
}

/** rdma_event_str - the event type's name, as librdmacm spells it. */
IWD_EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
    static const char *const names[] = {
        "RDMA_CM_EVENT_ADDR_RESOLVED",   "RDMA_CM_EVENT_ADDR_ERROR",
        "RDMA_CM_EVENT_ROUTE_RESOLVED",  "RDMA_CM_EVENT_ROUTE_ERROR",
        "RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_RESPONSE",
        "RDMA_CM_EVENT_CONNECT_ERROR",   "RDMA_CM_EVENT_UNREACHABLE",
        "RDMA_CM_EVENT_REJECTED",        "RDMA_CM_EVENT_ESTABLISHED",
        "RDMA_CM_EVENT_DISCONNECTED",    "RDMA_CM_EVENT_DEVICE_REMOVAL",
        "RDMA_CM_EVENT_MULTICAST_JOIN",  "RDMA_CM_EVENT_MULTICAST_ERROR",
        "RDMA_CM_EVENT_ADDR_CHANGE",     "RDMA_CM_EVENT_TIMEWAIT_EXIT",
    };
    if ((unsigned)event < sizeof names / sizeof names[0])
        return names[event];
    return "UNKNOWN EVENT";
}
