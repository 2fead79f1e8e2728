/* SPDX-License-Identifier: BSD-2-Clause */
/* libiwarp connection manager: librdmacm shapes (rdma_X becomes iwarp_cm_X).
 *
 * An event channel delivers one-shot events that must each be acknowledged; its fd is
 * readable while events are pending. Connections run MPA (RFC 5044, RFC 6581) over TCP
 * (IWARP_PS_TCP), or DDP stream sessions over SCTP (IWARP_PS_SCTP, RFC 5043).
 *
 * Who sends first: in the default mode the active side (the connector) must send the first
 * message (rdma_connect(3), "IWARP SPECIFIC"). With peer_to_peer set, the connector sends an
 * RFC 6581 zero-length RTR right after the handshake, so either side may then send first.
 *
 * The active side: iwarp_cm_create_id, iwarp_cm_resolve_addr (ADDR_RESOLVED),
 * iwarp_cm_resolve_route (ROUTE_RESOLVED; optional), iwarp_cm_create_qp, iwarp_cm_connect, then
 * ESTABLISHED or REJECTED / UNREACHABLE / CONNECT_ERROR. The passive side: iwarp_cm_create_id,
 * iwarp_cm_bind_addr, iwarp_cm_listen, then CONNECT_REQUEST on a new id, iwarp_cm_create_qp on
 * it and iwarp_cm_accept (ESTABLISHED) or iwarp_cm_reject. Either side: iwarp_cm_disconnect,
 * then DISCONNECTED on both. An id holds at most two unacknowledged address/route events and
 * three connection events; an event that finds no free slot is dropped and logged.
 *
 * Every function may be called from any thread; those on channels and ids take the context
 * lock (iwarp_cm_get_event and iwarp_cm_get_event_timeout wait without it; iwarp_cm_event_str
 * is pure). None may be called from a hook of the context (common.h).
 */
#ifndef IWARP_CM_H
#define IWARP_CM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "iwarp/common.h"
#include "iwarp/verbs.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * struct iwarp_cm_channel - an event channel (rdma_event_channel). Library storage: read it,
 * never allocate, copy or change it.
 */
struct iwarp_cm_channel {
    struct iwarp_ctx *context;
    int fd; /* readable while events are queued; may be made O_NONBLOCK; never close it */
};

/**
 * enum iwarp_port_space - the transport of a CM id: MPA over TCP (RDMA_PS_TCP's value), or
 * DDP over SCTP (RFC 5043; UDP-encapsulated, RFC 6951).
 */
enum iwarp_port_space { IWARP_PS_TCP = 0x0106, IWARP_PS_SCTP = 0x0084 };

/**
 * struct iwarp_cm_id - a connection identifier (rdma_cm_id). Library storage: read it, never
 * allocate or copy it; only context_user may be changed by the application.
 */
struct iwarp_cm_id {
    struct iwarp_ctx *context;
    struct iwarp_cm_channel *channel; /* where its events go */
    void *context_user;               /* rdma_cm_id.context: the application's, never read */
    struct iwarp_qp *qp;              /* from iwarp_cm_create_qp / iwarp_ddp_cm_create_qp */
    enum iwarp_port_space ps;
    struct sockaddr_storage local_addr; /* bound or connected local address (port included) */
    struct sockaddr_storage peer_addr;  /* the resolved or connected peer */
};

/**
 * enum iwarp_cm_event_type - CM events, librdmacm numbering (enum rdma_cm_event_type). The
 * library reports ADDR_RESOLVED, ROUTE_RESOLVED, CONNECT_REQUEST, ESTABLISHED, REJECTED,
 * UNREACHABLE, CONNECT_ERROR and DISCONNECTED.
 */
enum iwarp_cm_event_type {
    IWARP_CM_EVENT_ADDR_RESOLVED = 0,
    IWARP_CM_EVENT_ADDR_ERROR = 1,
    IWARP_CM_EVENT_ROUTE_RESOLVED = 2,
    IWARP_CM_EVENT_ROUTE_ERROR = 3,
    IWARP_CM_EVENT_CONNECT_REQUEST = 4,
    IWARP_CM_EVENT_CONNECT_RESPONSE = 5,
    IWARP_CM_EVENT_CONNECT_ERROR = 6,
    IWARP_CM_EVENT_UNREACHABLE = 7,
    IWARP_CM_EVENT_REJECTED = 8,
    IWARP_CM_EVENT_ESTABLISHED = 9,
    IWARP_CM_EVENT_DISCONNECTED = 10,
    IWARP_CM_EVENT_DEVICE_REMOVAL = 11,
    IWARP_CM_EVENT_MULTICAST_JOIN = 12,
    IWARP_CM_EVENT_MULTICAST_ERROR = 13,
    IWARP_CM_EVENT_ADDR_CHANGE = 14,
    IWARP_CM_EVENT_TIMEWAIT_EXIT = 15,
};

/**
 * iwarp_cm_event_str - the event type's name without its prefix ("ESTABLISHED", ...).
 *
 * Returns: a static string; "UNKNOWN" for a value not in enum iwarp_cm_event_type. Never NULL.
 * Ownership: the string is the library's.
 * Context: any thread; pure.
 */
IWARP_EXTERN const char *iwarp_cm_event_str(enum iwarp_cm_event_type type);

/**
 * enum iwarp_cm_rtr - RFC 6581 RTR message types (bit values of the MPA v2 word's B/C/D flags
 * as libiwarp encodes them in rtr_types).
 */
enum iwarp_cm_rtr {
    IWARP_CM_RTR_WRITE = 1, /* zero-length RDMA Write */
    IWARP_CM_RTR_READ = 2,  /* zero-length RDMA Read */
    IWARP_CM_RTR_SEND = 4,  /* zero-length Send */
};

/**
 * struct iwarp_conn_param - connection parameters (rdma_conn_param), with iWARP's MPA options
 * after the verbs-compatible prefix. Input struct for iwarp_cm_connect and iwarp_cm_accept
 * (common.h); the library fills it in events (comp_mask 0 there).
 */
struct iwarp_conn_param {
    const void *private_data;    /* sent in the MPA Request/Reply (or SCTP session message) */
    uint16_t private_data_len;   /* MPA allows 512 (508 with revision 2); 252 interoperates
                                    with Linux iWCM */
    uint8_t responder_resources; /* IRD; 0xFF: the device maximum */
    uint8_t initiator_depth;     /* ORD; 0xFF: the device maximum */
    uint8_t flow_control;        /* ignored */
    uint8_t retry_count;         /* ignored: TCP retransmits */
    uint8_t rnr_retry_count;     /* ignored */
    uint8_t srq;                 /* ignored: the QP says whether it uses an SRQ */
    uint32_t qp_num;             /* ignored: the id's QP is used */
    /* iWARP (MPA) options; all-zero means: revision 2 (RFC 6581), no CRC, no markers, no RTR */
    uint8_t mpa_rev;     /* 1 or 2; 0: 2 */
    bool crc;            /* ask for CRC32C (RFC 5044 §4.4) */
    bool markers;        /* ask the peer to insert markers (RFC 5044 §4.3) */
    bool peer_to_peer;   /* connector: RFC 6581 peer-to-peer mode */
    uint8_t rtr_types;   /* IWARP_CM_RTR_*: RTR types offered/accepted; 0: all */
    uint32_t timeout_ms; /* MPA Reply/Request timeout; 0: 10 s */
    /* Connector: hold the first FPDU (the RTR, or the first message) this long after the MPA
     * Reply. 0: none. A workaround for Linux siw 6.1 as responder, whose accept sends the Reply
     * before it installs its socket callbacks, so an FPDU arriving at once can go unnoticed
     * (250 ms is enough in practice); it costs that much connection set-up time. FPDUs the
     * responder sends meanwhile are taken: without the hold they would have crossed ours. */
    uint16_t first_fpdu_delay_ms;
    /* Connector with markers: when the peer rejects the Request that asks for markers (a
     * responder that cannot insert them has no other way to refuse, RFC 5044 §7.1.2; Linux siw
     * does so), connect once more without asking instead of reporting REJECTED with
     * IWARP_ERR_MPA_MARKERS. ESTABLISHED's param then shows markers false. */
    bool markers_fallback;
    /* IWARP_PS_SCTP connector: open a new SCTP association for this connection. Otherwise a
     * free stream of an association the context already has to the same peer carries it (one
     * DDP stream per SCTP stream, RFC 5043 §5.2), and a new association only when none has
     * room (iwarp_ctx_attr.sctp_streams). The MPA options above do not apply over SCTP. */
    bool sctp_own_association;
    uint32_t comp_mask; /* extension fields set (common.h): IWARP_CONN_PARAM_* bits */
    /* IWARP_CONN_PARAM_RETRY_REFUSED, connector over IWARP_PS_TCP: for this many milliseconds
     * from iwarp_cm_connect, a connection the peer refuses (TCP RST to our SYN) or closes or
     * resets before the first octet of its MPA Reply is dialed again every 100 ms: a new TCP
     * connection, the same id and QP (which never started, RFC 5044 §7.1.2). For a server
     * that listens again only a moment later (perftest -R's data connection), or a relay
     * that accepts before its own connection fails (qemu's user-mode hostfwd). Once the time
     * is up the last failure is reported as without it (REJECTED, IWARP_ERR_CONN_REFUSED or
     * IWARP_ERR_CONN_RESET). A Reject, an MPA error, a timeout (of TCP, or of a Reply that has
     * begun) are reported at once as ever; iwarp_cm_disconnect and iwarp_cm_destroy_qp end
     * the wait. 0 (the default, or the bit clear): no dialing again. Ignored by
     * iwarp_cm_accept and over IWARP_PS_SCTP (an association has its own INIT retries). */
    uint32_t retry_refused_ms;
};

/* iwarp_conn_param.comp_mask bits. */
#define IWARP_CONN_PARAM_RETRY_REFUSED (1u << 0) /* retry_refused_ms is set */

/**
 * struct iwarp_cm_event - a CM event (rdma_cm_event). Library storage, valid until
 * iwarp_cm_ack_event: read it, never allocate, copy by value or change it.
 */
struct iwarp_cm_event {
    struct iwarp_cm_id *id;        /* the id it is for (CONNECT_REQUEST: a new id) */
    struct iwarp_cm_id *listen_id; /* CONNECT_REQUEST: the listener */
    enum iwarp_cm_event_type event;
    int status; /* 0, or a negative IWARP_ERR_* (e.g. IWARP_ERR_MPA_REJECTED on REJECTED) */
    uint8_t private_data_buf[512]; /* where param.private_data points */
    /* CONNECT_REQUEST: the peer's private data and its IRD/ORD already swapped into our view
     * (responder_resources = what we may answer with, initiator_depth = ...), as librdmacm,
     * and the peer's MPA choices (mpa_rev, peer_to_peer, rtr_types, crc, markers).
     * REJECTED / ESTABLISHED: the peer's private data and the negotiated IRD/ORD and options.
     * Valid until the event is acked. Last, so that iwarp_conn_param can grow without moving
     * the fields above. */
    struct iwarp_conn_param param;
};

/**
 * iwarp_cm_create_channel - create an event channel (rdma_create_event_channel).
 *
 * Returns:
 *   0                    *ch is the new channel.
 *   IWARP_ERR_INVAL      ctx or ch is NULL.
 *   IWARP_ERR_NOMEM      out of memory.
 *   IWARP_ERR_IO         its eventfd cannot be created.
 * Ownership: the channel belongs to the caller until iwarp_cm_destroy_channel.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_cm_create_channel(struct iwarp_ctx *ctx, struct iwarp_cm_channel **ch);

/**
 * iwarp_cm_destroy_channel - destroy an event channel and close its fd.
 *
 * Returns:
 *   0                    destroyed.
 *   IWARP_ERR_INVAL      ch is NULL.
 *   IWARP_ERR_BUSY       ids of the channel remain, or events are queued on it (not yet
 *                        taken); nothing was done.
 * Ownership: ch is freed on success.
 * Context: any thread; takes the context lock. No thread may wait on it.
 */
IWARP_EXTERN int iwarp_cm_destroy_channel(struct iwarp_cm_channel *ch);

/**
 * iwarp_cm_create_id - create a CM id in port space ps (rdma_create_id).
 *
 * Returns:
 *   0                    *id is the new id; (*id)->context_user is context.
 *   IWARP_ERR_INVAL      ch or id is NULL, or ps is not IWARP_PS_TCP or IWARP_PS_SCTP.
 *   IWARP_ERR_NOTSUP     ps is IWARP_PS_SCTP and the library was built without usrsctp.
 *   IWARP_ERR_NOMEM      out of memory.
 * Ownership: context is the application's, never read. The id belongs to the caller until
 *   iwarp_cm_destroy_id.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_cm_create_id(struct iwarp_cm_channel *ch, struct iwarp_cm_id **id,
                                    void *context, enum iwarp_port_space ps);

/**
 * iwarp_cm_destroy_id - destroy a CM id (rdma_destroy_id).
 *
 * A connection still up or being set up is closed abortively, without an event. A listener
 * stops listening; connections it accepted but has not announced yet are dropped.
 *
 * Returns:
 *   0                    destroyed.
 *   IWARP_ERR_INVAL      id is NULL.
 *   IWARP_ERR_BUSY       events for the id are unacknowledged, a QP is attached (destroy it
 *                        first: iwarp_cm_destroy_qp), or, for a listener, CONNECT_REQUEST
 *                        events naming it are unacknowledged; nothing was done.
 * Ownership: id is freed on success.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_cm_destroy_id(struct iwarp_cm_id *id);

/**
 * iwarp_cm_migrate_id - move the id's events to another channel of the same context
 * (rdma_migrate_id): its events still queued on the old channel move along, in order, and so
 * do a listener's queued CONNECT_REQUESTs (with their ids); later ones go to the new channel.
 * Events already taken stay valid and are acknowledged as before.
 *
 * Returns:
 *   0                    moved (also when to is its channel already).
 *   IWARP_ERR_INVAL      id or to is NULL, or to is of another context.
 * Ownership: none; the old channel may be destroyed once nothing else uses it.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_cm_migrate_id(struct iwarp_cm_id *id, struct iwarp_cm_channel *to);

/**
 * iwarp_cm_resolve_addr - set the peer's address (rdma_resolve_addr).
 *
 * Resolution is immediate (numeric addresses only): ADDR_RESOLVED is queued before the call
 * returns; timeout_ms is ignored. src (may be NULL) is the local address to connect from.
 * Allowed on a new or bound id, and again after a first resolution.
 *
 * Returns:
 *   0                    resolved; ADDR_RESOLVED is queued.
 *   IWARP_ERR_INVAL      id or dst is NULL; dst is not AF_INET or AF_INET6; src is of
 *                        another family.
 *   IWARP_ERR_STATE      the route is resolved already, or the id listens, connects or is
 *                        connected.
 *   IWARP_ERR_BUSY       the id's two address/route event slots hold unacknowledged events.
 * Ownership: src and dst are copied.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_cm_resolve_addr(struct iwarp_cm_id *id, const struct sockaddr *src,
                                       const struct sockaddr *dst, int timeout_ms);

/**
 * iwarp_cm_resolve_route - resolve the route to the resolved address (rdma_resolve_route).
 *
 * Immediate: ROUTE_RESOLVED is queued before the call returns; timeout_ms is ignored. Kept
 * for porting; iwarp_cm_connect does not require it.
 *
 * Returns:
 *   0                    ROUTE_RESOLVED is queued.
 *   IWARP_ERR_INVAL      id is NULL.
 *   IWARP_ERR_STATE      the address is not resolved (iwarp_cm_resolve_addr), or the route is.
 *   IWARP_ERR_BUSY       the id's two address/route event slots hold unacknowledged events.
 * Ownership: none.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_cm_resolve_route(struct iwarp_cm_id *id, int timeout_ms);

/**
 * iwarp_cm_bind_addr - set the local address to listen on (rdma_bind_addr); port 0 picks one
 * at iwarp_cm_listen. The IPv6 wildcard :: listens on IPv4 as well (dual-stack, as rdma_cm by
 * default): IPv4 peers appear as ::ffff:a.b.c.d. Any other IPv6 address is IPv6 only.
 *
 * Returns:
 *   0                    bound (the socket is made by iwarp_cm_listen).
 *   IWARP_ERR_INVAL      id or addr is NULL, or addr is not AF_INET or AF_INET6.
 *   IWARP_ERR_STATE      the id is already bound, resolved or in use.
 * Ownership: addr is copied.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_cm_bind_addr(struct iwarp_cm_id *id, const struct sockaddr *addr);

/**
 * iwarp_cm_listen - listen on the bound address (rdma_listen).
 *
 * Each connection that arrives runs the MPA (or SCTP session) handshake on a hidden id, which
 * is announced by a CONNECT_REQUEST once the peer's Request is in. local_addr then holds the
 * bound port. backlog <= 0: the system's maximum (TCP) or 1 (SCTP).
 *
 * Returns:
 *   0                    listening.
 *   IWARP_ERR_INVAL      id is NULL.
 *   IWARP_ERR_STATE      the id is not bound (iwarp_cm_bind_addr) or already listens.
 *   IWARP_ERR_NOMEM      out of memory.
 *   IWARP_ERR_ADDR       the address is in use, not local, or of a family the system lacks.
 *   IWARP_ERR_IO         the socket or the SCTP endpoint cannot be made.
 * Ownership: none.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_cm_listen(struct iwarp_cm_id *id, int backlog);

/**
 * iwarp_cm_create_qp - create a QP for the id (rdma_create_qp), owned by it.
 *
 * As iwarp_create_qp; the id then connects it (iwarp_cm_connect, iwarp_cm_accept). Create it
 * before connecting or accepting.
 *
 * Returns:
 *   0                    id->qp is the new QP; attr->cap is raised to what was allocated.
 *   IWARP_ERR_INVAL      id, pd or attr is NULL, or as iwarp_create_qp.
 *   IWARP_ERR_BUSY       the id has a QP already.
 *   IWARP_ERR_NOTSUP, IWARP_ERR_NOMEM  as iwarp_create_qp.
 * Ownership: as iwarp_create_qp; the QP is destroyed with iwarp_cm_destroy_qp (or
 *   iwarp_destroy_qp, which detaches it).
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_cm_create_qp(struct iwarp_cm_id *id, struct iwarp_pd *pd,
                                    struct iwarp_qp_init_attr *attr);

/**
 * iwarp_cm_destroy_qp - destroy the id's QP (rdma_destroy_qp); nothing when it has none.
 *
 * The connection, if still up, ends without an event (but an id being disconnected,
 * iwarp_cm_disconnect, still gets its DISCONNECTED); outstanding WRs are flushed. Over TCP an
 * established connection's socket is closed as it stands: what it already holds (e.g. a last
 * Send that completed) still reaches the peer before the FIN, as when a kernel iWARP device
 * releases its socket; one still being set up is reset. Over SCTP the stream's session
 * Terminate ends it.
 *
 * Returns: nothing.
 * Ownership: id->qp is freed and becomes NULL.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN void iwarp_cm_destroy_qp(struct iwarp_cm_id *id);

/**
 * iwarp_cm_attach_qp - let the id connect a QP the application made with iwarp_create_qp
 * (rdma_connect / rdma_accept naming a QP by rdma_conn_param.qp_num, as the kernel's iw_cm
 * looks the QP up by number), or, with qp NULL, let go of the id's QP without destroying it.
 *
 * Attached, the QP is the id's as if iwarp_cm_create_qp had made it: the id connects it,
 * iwarp_destroy_qp detaches it first, iwarp_cm_destroy_qp destroys it. Detaching closes the
 * connection, if any, abortively without an event (as iwarp_destroy_qp would).
 *
 * Returns:
 *   0                    attached (id->qp is qp), or detached (id->qp is NULL).
 *   IWARP_ERR_INVAL      id is NULL, or qp is of another context.
 *   IWARP_ERR_BUSY       the id has a QP already, or qp belongs to another id.
 *   IWARP_ERR_STATE      the id listens, connects or is connected.
 * Ownership: qp stays the caller's to destroy; the id only borrows it.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_cm_attach_qp(struct iwarp_cm_id *id, struct iwarp_qp *qp);

/**
 * iwarp_cm_connect - connect to the resolved peer (rdma_connect).
 *
 * Starts the TCP connection and the MPA handshake as initiator (or the SCTP association and
 * DDP session) and returns; the outcome is an event: ESTABLISHED, REJECTED (the peer rejected,
 * refused or reset the connection: status IWARP_ERR_MPA_REJECTED, IWARP_ERR_MPA_MARKERS,
 * IWARP_ERR_SESSION_REJECTED, IWARP_ERR_CONN_REFUSED, IWARP_ERR_CONN_RESET,
 * IWARP_ERR_SESSION_TERMINATED), UNREACHABLE (no route, timed out) or CONNECT_ERROR (any other
 * MPA or session failure, in status). A refusal that happens at once is reported the same way,
 * and the call returns 0. With IWARP_CONN_PARAM_RETRY_REFUSED, a refusal or an early close is
 * dialed again for a while before it is reported (iwarp_conn_param.retry_refused_ms).
 *
 * Returns:
 *   0                    connecting; an event follows.
 *   IWARP_ERR_INVAL      id or param is NULL; private_data_len is over 512 (over 508 with
 *                        revision 2, or over SCTP), or private_data is NULL with a length;
 *                        mpa_rev is not 0, 1 or 2; peer_to_peer with revision 1; rtr_types
 *                        has none of the IWARP_CM_RTR_* bits but is not 0.
 *   IWARP_ERR_NOTSUP     param->comp_mask has a bit this version does not know (checked
 *                        after the private data, before everything else).
 *   IWARP_ERR_STATE      the address is not resolved, the id has no QP, or it is already
 *                        connecting or connected.
 *   IWARP_ERR_DDP_RTR    peer_to_peer with a DDP-level QP (RFC 6581 RTRs are RDMAP's).
 *   IWARP_ERR_NOMEM      out of memory.
 *   IWARP_ERR_ADDR       the source address (resolve_addr's src) is not usable.
 *   IWARP_ERR_UNREACHABLE  (SCTP) no local address routes to the peer.
 *   IWARP_ERR_IO         a socket cannot be made.
 * Ownership: param and its private data are copied.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_cm_connect(struct iwarp_cm_id *id, const struct iwarp_conn_param *param);

/**
 * iwarp_cm_accept - accept a connection request (rdma_accept), on the id of a CONNECT_REQUEST.
 *
 * Create the id's QP first. Sends the MPA Reply (or the SCTP session Accept) with param's IRD,
 * ORD, private data and MPA choices (crc: CRC on both ways; markers: ask the initiator for
 * markers); revision and RTR follow the Request. ESTABLISHED is queued before the call
 * returns and the QP may be posted to at once; its sends wait for the initiator's first FPDU
 * (RFC 5044 §7.1.2). param may be NULL for defaults (no private data).
 *
 * Returns:
 *   0                    accepted; ESTABLISHED is queued.
 *   IWARP_ERR_INVAL      id is NULL; private_data_len is over 512 (over 508 for a revision 2
 *                        Request, or over SCTP), or private_data is NULL with a length.
 *   IWARP_ERR_NOTSUP     param->comp_mask has a bit this version does not know (checked
 *                        after the private data, before everything else).
 *   IWARP_ERR_STATE      the id is not a pending CONNECT_REQUEST's, or has no QP.
 *   IWARP_ERR_CONN_RESET the initiator gave up meanwhile (or the transport error that ended
 *                        the connection, e.g. IWARP_ERR_UNREACHABLE); the id is closed, no
 *                        event follows, and the QP is in error: the WRs posted to it complete,
 *                        flushed (as rdma_accept moves the QP to error when it fails).
 *   IWARP_ERR_DDP_RTR    the initiator asked for peer-to-peer mode and the QP is DDP-level:
 *                        reject instead.
 *   IWARP_ERR_NOMEM      out of memory (over TCP with CRC on and an IRD above 0, the
 *                        connection's 253 KiB staging ring for Read Responses is allocated
 *                        here); nothing changed: the request may be accepted or rejected again.
 * Ownership: param and its private data are copied.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_cm_accept(struct iwarp_cm_id *id, const struct iwarp_conn_param *param);

/**
 * iwarp_cm_reject - reject a connection request (rdma_reject), on the id of a CONNECT_REQUEST.
 *
 * Sends an MPA Reply with the Reject bit and the private data (or the SCTP session Reject),
 * then closes. The initiator sees REJECTED. When the initiator has already gone, nothing is
 * sent and the call still succeeds. Destroy the id afterwards.
 *
 * Returns:
 *   0                    rejected (or the initiator had gone).
 *   IWARP_ERR_INVAL      id is NULL; private_data_len is over 512 (over 508 for a revision 2
 *                        Request), or private_data is NULL with a length.
 *   IWARP_ERR_STATE      the id is not a pending CONNECT_REQUEST's.
 * Ownership: private_data is copied.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_cm_reject(struct iwarp_cm_id *id, const void *private_data,
                                 uint16_t private_data_len);

/**
 * iwarp_cm_disconnect - close the connection (rdma_disconnect).
 *
 * Established: graceful; posted sends drain, then TCP FIN (or the SCTP session Terminate), and
 * DISCONNECTED follows on both sides; later posts fail with IWARP_ERR_STATE. Still connecting:
 * abortive, CONNECT_ERROR (status IWARP_ERR_CONN_RESET) follows.
 *
 * Returns:
 *   0                    closing; an event follows.
 *   IWARP_ERR_INVAL      id is NULL.
 *   IWARP_ERR_STATE      the id is neither connected nor connecting: never was, is a pending
 *                        CONNECT_REQUEST's (reject it), or is closing or closed already.
 * Ownership: none.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_cm_disconnect(struct iwarp_cm_id *id);

/**
 * iwarp_cm_get_event - take the next event of the channel (rdma_get_cm_event).
 *
 * Blocks until one is queued, unless the channel's fd is non-blocking (O_NONBLOCK). In
 * IWARP_PROGRESS_CALLER mode it drives progress while it waits (and once, without waiting,
 * when the fd is non-blocking). Events of one id come in the order they happened.
 *
 * Returns:
 *   0                    *ev is the event.
 *   IWARP_ERR_INVAL      ch or ev is NULL.
 *   IWARP_ERR_BUSY       the fd is non-blocking and no event is queued.
 *   IWARP_ERR_IO         waiting on the fd failed.
 * Ownership: *ev is the library's, valid until iwarp_cm_ack_event(*ev); ack every event.
 * Context: any thread; waits without the context lock.
 */
IWARP_EXTERN int iwarp_cm_get_event(struct iwarp_cm_channel *ch, struct iwarp_cm_event **ev);

/**
 * iwarp_cm_get_event_timeout - iwarp_cm_get_event with a timeout (-1: forever, 0: poll),
 * whatever the fd's O_NONBLOCK.
 *
 * Returns:
 *   0                    *ev is the event.
 *   IWARP_ERR_INVAL      ch or ev is NULL.
 *   IWARP_ERR_TIMEDOUT   none came within timeout_ms.
 *   IWARP_ERR_IO         waiting on the fd failed.
 * Ownership: as iwarp_cm_get_event.
 * Context: any thread; waits without the context lock.
 */
IWARP_EXTERN int iwarp_cm_get_event_timeout(struct iwarp_cm_channel *ch, struct iwarp_cm_event **ev,
                                            int timeout_ms);

/**
 * iwarp_cm_ack_event - acknowledge (release) an event (rdma_ack_cm_event).
 *
 * Returns:
 *   0                    released; ev and its private data must not be used any more.
 *   IWARP_ERR_INVAL      ev is NULL.
 *   IWARP_ERR_STATE      ev was already acknowledged.
 * Ownership: ev goes back to the library.
 * Context: any thread; takes the context lock.
 */
IWARP_EXTERN int iwarp_cm_ack_event(struct iwarp_cm_event *ev);

#ifdef __cplusplus
}
#endif
#endif
