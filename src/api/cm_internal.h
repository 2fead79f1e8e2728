/*
 * The connection manager's objects, shared by its transports (API layer, L8): cm.c (the public
 * functions, MPA over TCP) and cm_sctp.c (DDP over SCTP, RFC 5043). Lock: ctx->lock, held by
 * every function declared here.
 */
#ifndef IWARP_API_CM_INTERNAL_H
#define IWARP_API_CM_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "api/api_internal.h"
#include "iwarp/cm.h"
#include "llp/llp_tcp.h"
#include "loop/loop.h"

#define CM_SLOTS_API       2u /* ADDR_RESOLVED, ROUTE_RESOLVED */
#define CM_SLOTS_CONN      3u /* CONNECT_REQUEST, ESTABLISHED/REJECTED/..., DISCONNECTED */
#define CM_SLOTS           (CM_SLOTS_API + CM_SLOTS_CONN)
/* IRD/ORD 0xFF in a conn_param: the device maximum (librdmacm RDMA_MAX_RESP_RES). */
#define CM_IRD_ORD_MAX_REQ 0xFFu
/* After our FIN, how long the peer has to send its own before we reset the connection. */
#define CM_LINGER_NS       3000000000ull

enum cm_state {
    CM_IDLE = 0,
    CM_ADDR,       /* bound or address resolved */
    CM_ROUTE,      /* route resolved */
    CM_LISTEN,     /* listening */
    CM_CONNECTING, /* TCP connect in progress */
    CM_MPA,        /* MPA negotiation (active; or passive before the Request, hidden) */
    CM_REQUEST,    /* passive: CONNECT_REQUEST delivered, waiting for accept/reject */
    CM_ESTABLISHED,
    CM_CLOSING, /* iwarp_cm_disconnect: the QP drains, FIN, then the peer's FIN */
    CM_CLOSED,  /* the connection is over (or was never made) */
};

struct cm_id;

struct cm_ev {
    struct iwarp_cm_event pub; /* first: the public event points here */
    struct cm_ev *next;        /* channel queue */
    struct cm_id *owner;
    bool busy; /* queued or delivered, not yet acked */
};

struct cm_channel {
    struct iwarp_cm_channel pub; /* first */
    struct cm_ev *head, *tail;
    uint32_t n_ids;
};

struct cm_conn {
    struct iwarp_loop_src src;
    struct iwarp_llp_tcp tcp;
    uint8_t *bounce;
    struct iwarp_llp_conn_txf *txf;
    struct iwarp_trace_conn *trace; /* the packet trace (holds its sink's reference), or NULL */
    uint8_t *trace_buf;             /* its 2 * IWARP_TRACE_CONN_BUF octets */
    /* active side: the MPA configuration and private data kept from connect() until TCP is
     * up and the negotiation starts (it copies them then) */
    struct iwarp_llp_conn_cfg cfg;
    uint8_t pd[IWARP_MPA_PD_MAX];
};

struct cm_listener {
    struct iwarp_loop_src src;
    struct iwarp_llp_tcp_listener tcp;
    struct cm_id *hidden;   /* accepted connections not yet announced */
    uint32_t n_req_unacked; /* CONNECT_REQUEST events naming this listener, not acked */
};

struct cm_sctp_link; /* cm_sctp.c */

struct cm_id {
    struct iwarp_cm_id pub; /* first: the public handle points here */
    struct cm_channel *ch;
    enum cm_state state;
    bool passive;
    struct cm_id *listen_id;   /* passive: the listener that accepted it */
    struct cm_id *next_hidden; /* in listen_id's hidden list while hidden */
    struct cm_listener *lsn;   /* listening ids */
    struct cm_conn *conn;
    uint64_t linger_deadline; /* UINT64_MAX: none */
    bool markers_fallback;    /* active: on a Reject of our markers, retry once without */
    /* active: the source address the application asked for (family 0: any). Kept apart from
     * pub.local_addr, which becomes the connection's bound address: a second connection
     * (markers_fallback) must not bind the first one's port, which TIME_WAIT may still hold. */
    struct sockaddr_storage bind_src;
    struct cm_sctp_link *sctp;    /* an IWARP_PS_SCTP connection (cm_sctp.c), or NULL */
    struct cm_sctp_lsn *sctp_lsn; /* an IWARP_PS_SCTP listener (cm_sctp.c), or NULL */
    uint32_t n_unacked;
    struct cm_ev ev[CM_SLOTS];
};

/* Queue an event on id's channel (conn: a connection event slot, else an API one).
 * Returns 0 or IWARP_ERR_BUSY (no free slot: logged). */
int iwarp_api_cm_emit(struct cm_id *id, bool conn, enum iwarp_cm_event_type type, int status,
                      const struct iwarp_conn_param *param, const uint8_t *pd, uint16_t pd_len);

/* IRD/ORD of a conn_param field (0xFF: the device maximum; more is clipped) and back. */
uint16_t iwarp_api_cm_ird_ord(uint8_t v);
uint8_t iwarp_api_cm_ird_ord_report(uint16_t v);

/* ---- DDP over SCTP (cm_sctp.c); each returns like the public function it serves ---------- */

int iwarp_api_sctp_listen(struct cm_id *id, int backlog);
/* The listener goes away: associations it accepted stay, new sessions on them are refused. */
void iwarp_api_sctp_listen_close(struct cm_id *id);
int iwarp_api_sctp_connect(struct cm_id *id, const struct iwarp_conn_param *param);
int iwarp_api_sctp_accept(struct cm_id *id, const struct iwarp_conn_param *param);
int iwarp_api_sctp_reject(struct cm_id *id, const void *pd, uint16_t pd_len);
int iwarp_api_sctp_disconnect(struct cm_id *id);
/* The id lets go of its stream: abortive while connected (destroy_qp, destroy_id); the QP,
 * if attached, is flushed and detached. report: DISCONNECTED when it was up. */
void iwarp_api_sctp_abort(struct cm_id *id, bool report);
/* destroy_id: frees id->sctp (after abort). */
void iwarp_api_sctp_free(struct cm_id *id);
/* iwarp_ctx_destroy: closes the context's SCTP endpoints. */
void iwarp_api_sctp_ctx_fini(struct iwarp_ctx *ctx);

#endif
