/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The connection manager's objects and its transport interface (API layer, L8).
 *
 * cm.c is the one connection manager: channels, ids, events, the id states and the mapping
 * from a failure to an event, the same for every transport. A transport (cm_tcp.c: MPA over
 * kernel TCP; cm_sctp.c: DDP over SCTP, RFC 5043) implements struct cm_transport: it owns its
 * sockets, loop sources, timers and the QP's data-path hook, and tells the CM what happened
 * through the iwarp_cm_on_*() calls below, the shape of Linux iw_cm over its providers'
 * iw_connect/iw_accept ops and their event upcalls. Only cm.c writes an id's state;
 * transports may read it.
 *
 * Lock: ctx->lock, held by every function declared here.
 */
#ifndef IWARP_API_CM_INTERNAL_H
#define IWARP_API_CM_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "api/api_internal.h"
#include "iwarp/cm.h"

#define CM_SLOTS_API  2u /* ADDR_RESOLVED, ROUTE_RESOLVED */
#define CM_SLOTS_CONN 3u /* CONNECT_REQUEST, ESTABLISHED/REJECTED/..., DISCONNECTED */
#define CM_SLOTS      (CM_SLOTS_API + CM_SLOTS_CONN)
/* After our end of the stream (FIN, Terminate), how long the peer has to answer with its own
 * before we abort. */
#define CM_LINGER_NS  3000000000ull

enum cm_state {
    CM_IDLE = 0,
    CM_ADDR,        /* bound or address resolved */
    CM_ROUTE,       /* route resolved */
    CM_LISTEN,      /* listening */
    CM_CONNECTING,  /* active: connect() until ESTABLISHED or a failure */
    CM_REQUEST,     /* passive: CONNECT_REQUEST delivered, waiting for accept/reject */
    CM_ESTABLISHED, /* both sides may send */
    CM_CLOSING,     /* iwarp_cm_disconnect: the QP drains, then the stream ends */
    CM_CLOSED,      /* the connection is over (or was never made) */
};

struct cm_id;
struct cm_transport;

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
    /* IWARP_PROGRESS_CALLER threads waiting for an event inside the loop (not on the fd): an
     * event pushed by another thread must wake the loop for them. */
    uint32_t n_waiters;
};

struct cm_id {
    struct iwarp_cm_id pub; /* first: the public handle points here */
    struct cm_channel *ch;
    const struct cm_transport *tp; /* chosen by the port space at create_id */
    enum cm_state state;
    bool passive;
    struct cm_id *listen_id; /* passive: the listener that accepted it */
    void *conn;              /* the transport's connection object, or NULL */
    void *lsn;               /* listening: the transport's listener, or NULL */
    uint32_t n_req_unacked;  /* listening: CONNECT_REQUEST events naming it, not acked */
    /* active: the source address the application asked for (family 0: any). Kept apart from
     * pub.local_addr, which becomes the connection's bound address. */
    struct sockaddr_storage bind_src;
    uint32_t n_unacked;
    struct cm_ev ev[CM_SLOTS];
};

/*
 * A transport. Every op is called with ctx->lock held, by cm.c only, after cm.c's state
 * checks. Returns follow the public function each op serves.
 */
struct cm_transport {
    /* id is bound (pub.local_addr); the transport sets id->lsn and the bound port. */
    int (*listen)(struct cm_id *id, int backlog);
    /* The listener goes away (destroy_id): connections it announced stay. */
    void (*listen_close)(struct cm_id *id);
    /* Whether connect()'s transport options are valid, before any state is looked at (an
     * invalid argument is IWARP_ERR_INVAL whatever the state). NULL: none to check. */
    int (*check_param)(const struct iwarp_conn_param *param);
    /* id is CONNECTING with its QP and peer address; param is validated for the CM's part
     * (private data). A failure found later, or at once, is reported with
     * iwarp_cm_on_failed(); an error returned means nothing happened (state restored). */
    int (*connect)(struct cm_id *id, const struct iwarp_conn_param *param);
    /* id is REQUEST with a QP: answer, attach the QP, iwarp_cm_on_established(). */
    int (*accept)(struct cm_id *id, const struct iwarp_conn_param *param);
    /* id is REQUEST: refuse with private data. cm.c marks it CLOSED afterwards. */
    int (*reject)(struct cm_id *id, const void *pd, uint16_t pd_len);
    /* id was ESTABLISHED and is CLOSING now: drain the QP, end the stream gracefully, and
     * report iwarp_cm_on_closed() when it is over (a linger bounds the wait). */
    int (*disconnect)(struct cm_id *id);
    /* The application ends a live connection without the graceful exchange; its QP is
     * flushed. rst: reset it (TCP RST); otherwise close the socket as it stands, so that what
     * it already holds still goes out before the FIN (a kernel device's socket release does the
     * same). Returns false (nothing done) when there was no live connection; cm.c then reports
     * and marks the id. */
    bool (*abort)(struct cm_id *id, bool rst);
    /* Wait until no thread moves the octets of id's connection, or of the connections its
     * listener has not announced (lock held; let go of meanwhile): cm.c calls it first in
     * every function that may close or free them, before it looks at any state. NULL: the
     * transport keeps the lock throughout. */
    void (*quiesce)(struct cm_id *id);
    /* The QP has new work to send (its iwarp_qp_llp.kick). */
    void (*kick)(struct iwarp_qp_impl *q);
    /* Read the QP's connection now, as if it were readable (its iwarp_qp_llp.poll_rx); NULL:
     * the transport has no socket of its own to read (usrsctp's upcalls deliver). */
    void (*poll_rx)(struct iwarp_qp_impl *q, uint64_t now_ns);
    /* The connection's retransmission counters (its iwarp_qp_llp.retrans; a statistics query,
     * not the data path); NULL: the transport has none (0). */
    void (*retrans)(struct cm_id *id, uint64_t *bytes, uint64_t *segs);
    /* destroy_id: let go of id->conn (abortive when live) and free it. */
    void (*free)(struct cm_id *id, bool live);
    /* iwarp_ctx_destroy: the transport's context-wide state goes (NULL: it has none). */
    void (*ctx_fini)(struct iwarp_ctx *ctx);
};

/* The transports (cm_tcp.c; cm_sctp.c, only when built with usrsctp). iwarp_ctx_create
 * installs them in the context (ctx->cm_tcp, ctx->cm_sctp), where cm.c finds them. */
extern const struct cm_transport iwarp_cm_tcp;
extern const struct cm_transport iwarp_cm_sctp;

/* ---- what a transport tells the CM (cm.c) ------------------------------------------------- */

/* What a connection set-up said, as a transport found it, for an event's conn_param. */
struct cm_setup {
    uint16_t ird, ord; /* the peer's (request, reject) or the negotiated (established) */
    uint8_t mpa_rev;   /* 0 over SCTP */
    bool peer_to_peer;
    uint8_t rtr_types; /* IWARP_CM_RTR_* */
    bool crc, markers;
    const uint8_t *pd; /* the peer's private data */
    uint16_t pd_len;
};

/* A new passive id for listener lid, counted on its channel; NULL when out of memory. The
 * transport sets its conn and addresses, then calls iwarp_cm_on_request(). */
struct cm_id *iwarp_cm_passive_id(struct cm_id *lid);

/* Passive: the peer asks to connect (the ULP decides): REQUEST, CONNECT_REQUEST. */
void iwarp_cm_on_request(struct cm_id *id, const struct cm_setup *s);

/* The connection is up: ESTABLISHED and its event. */
void iwarp_cm_on_established(struct cm_id *id, const struct cm_setup *s);

/* Active: the peer refused (MPA Reject, session Reject): CLOSED, REJECTED with status. */
void iwarp_cm_on_rejected(struct cm_id *id, int status, const struct cm_setup *s);

/* Active: the connection failed before it was up: CLOSED and the event for status
 * (docs/design.md, "Connection events"). */
void iwarp_cm_on_failed(struct cm_id *id, int status);

/* The connection is over for a reason of the peer's or the transport's: DISCONNECTED when it
 * was up; a failure with status (0: IWARP_ERR_CONN_RESET) while connecting; else quietly
 * CLOSED. */
void iwarp_cm_on_closed(struct cm_id *id, int status);

/* The transport carries id's QP from now on (kick) / no longer (lock held). */
void iwarp_cm_hook_qp(struct cm_id *id);
void iwarp_cm_unhook_qp(struct cm_id *id);

/* Length of an IPv4 or IPv6 socket address; 0 for other families. */
socklen_t iwarp_cm_addrlen(const struct sockaddr *sa);

/* IRD/ORD of a conn_param field (0xFF: the device maximum; more is clipped). */
uint16_t iwarp_cm_ird_ord(uint8_t v);

#endif
