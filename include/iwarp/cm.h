/* libiwarp connection manager: librdmacm shapes (rdma_X becomes iwarp_cm_X).
 *
 * An event channel delivers one-shot events that must each be acknowledged; its fd is
 * readable while events are pending. Connections run MPA (RFC 5044, RFC 6581) over TCP.
 *
 * Who sends first: in the default mode the active side (the connector) must send the first
 * message (rdma_connect(3), "IWARP SPECIFIC"). With peer_to_peer set, the connector sends an
 * RFC 6581 zero-length RTR right after the handshake, so either side may then send first.
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

struct iwarp_cm_channel {
    struct iwarp_ctx *context;
    int fd;
};

enum iwarp_port_space { IWARP_PS_TCP = 0x0106, IWARP_PS_SCTP = 0x0084 };

struct iwarp_cm_id {
    struct iwarp_ctx *context;
    struct iwarp_cm_channel *channel;
    void *context_user; /* rdma_cm_id.context */
    struct iwarp_qp *qp;
    enum iwarp_port_space ps;
    struct sockaddr_storage local_addr;
    struct sockaddr_storage peer_addr;
};

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

IWARP_EXTERN const char *iwarp_cm_event_str(enum iwarp_cm_event_type type);

/* RFC 6581 RTR message types (bit values of the MPA v2 word's B/C/D flags as libiwarp encodes
 * them in rtr_types). */
enum iwarp_cm_rtr {
    IWARP_CM_RTR_WRITE = 1, /* zero-length RDMA Write */
    IWARP_CM_RTR_READ = 2,  /* zero-length RDMA Read */
    IWARP_CM_RTR_SEND = 4,  /* zero-length Send */
};

/* rdma_conn_param, with iWARP's MPA options after the verbs-compatible prefix. */
struct iwarp_conn_param {
    const void *private_data;
    uint16_t private_data_len;   /* MPA allows 512; 252 interoperates with Linux iWCM */
    uint8_t responder_resources; /* IRD; 0xFF: the device maximum */
    uint8_t initiator_depth;     /* ORD; 0xFF: the device maximum */
    uint8_t flow_control;
    uint8_t retry_count;     /* ignored: TCP retransmits */
    uint8_t rnr_retry_count; /* ignored */
    uint8_t srq;
    uint32_t qp_num;
    /* iWARP (MPA) options; all-zero means: revision 2 (RFC 6581), no CRC, no markers, no RTR */
    uint8_t mpa_rev;     /* 1 or 2; 0: 2 */
    bool crc;            /* ask for CRC32C (RFC 5044 §4.4) */
    bool markers;        /* ask the peer to insert markers (RFC 5044 §4.3) */
    bool peer_to_peer;   /* connector: RFC 6581 peer-to-peer mode */
    uint8_t rtr_types;   /* IWARP_CM_RTR_*: RTR types offered/accepted; 0: all */
    uint32_t timeout_ms; /* MPA Reply/Request timeout; 0: 10 s / 5 s like siw */
    /* Connector: hold the first FPDU (the RTR, or the first message) this long after the MPA
     * Reply. 0: none. A workaround for Linux siw 6.1 as responder, whose accept sends the Reply
     * before it installs its socket callbacks, so an FPDU arriving at once can go unnoticed
     * (250 ms is enough in practice); it costs that much connection set-up time. */
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
    uint32_t comp_mask; /* extension fields set (common.h); none defined yet: 0 */
};

struct iwarp_cm_event {
    struct iwarp_cm_id *id;
    struct iwarp_cm_id *listen_id; /* CONNECT_REQUEST: the listener */
    enum iwarp_cm_event_type event;
    int status; /* 0, or a negative IWARP_ERR_* (e.g. IWARP_ERR_MPA_REJECTED on REJECTED) */
    uint8_t private_data_buf[512];
    /* CONNECT_REQUEST: the peer's private data and its IRD/ORD already swapped into our view
     * (responder_resources = what we may answer with, initiator_depth = ...), as librdmacm.
     * REJECTED / ESTABLISHED: the peer's private data. Valid until the event is acked.
     * Last, so that iwarp_conn_param can grow without moving the fields above. */
    struct iwarp_conn_param param;
};

IWARP_EXTERN int iwarp_cm_create_channel(struct iwarp_ctx *ctx, struct iwarp_cm_channel **ch);
/* IWARP_ERR_BUSY while ids use it. */
IWARP_EXTERN int iwarp_cm_destroy_channel(struct iwarp_cm_channel *ch);

IWARP_EXTERN int iwarp_cm_create_id(struct iwarp_cm_channel *ch, struct iwarp_cm_id **id,
                                    void *context, enum iwarp_port_space ps);
/* Destroys the QP's connection too (abortive if still connected). IWARP_ERR_BUSY while events
 * for it are unacknowledged or a QP is attached (destroy the QP first: iwarp_cm_destroy_qp). */
IWARP_EXTERN int iwarp_cm_destroy_id(struct iwarp_cm_id *id);

/* Resolution is immediate for TCP (numeric addresses); the events are kept for porting. */
IWARP_EXTERN int iwarp_cm_resolve_addr(struct iwarp_cm_id *id, const struct sockaddr *src,
                                       const struct sockaddr *dst, int timeout_ms);
IWARP_EXTERN int iwarp_cm_resolve_route(struct iwarp_cm_id *id, int timeout_ms);

IWARP_EXTERN int iwarp_cm_bind_addr(struct iwarp_cm_id *id, const struct sockaddr *addr);
IWARP_EXTERN int iwarp_cm_listen(struct iwarp_cm_id *id, int backlog);

/* Create a QP for the id (rdma_create_qp). */
IWARP_EXTERN int iwarp_cm_create_qp(struct iwarp_cm_id *id, struct iwarp_pd *pd,
                                    struct iwarp_qp_init_attr *attr);
IWARP_EXTERN void iwarp_cm_destroy_qp(struct iwarp_cm_id *id);

/* Active side. Ownership: param and its private data are copied. */
IWARP_EXTERN int iwarp_cm_connect(struct iwarp_cm_id *id, const struct iwarp_conn_param *param);
/* Passive side, on the id of a CONNECT_REQUEST. */
IWARP_EXTERN int iwarp_cm_accept(struct iwarp_cm_id *id, const struct iwarp_conn_param *param);
IWARP_EXTERN int iwarp_cm_reject(struct iwarp_cm_id *id, const void *private_data,
                                 uint16_t private_data_len);
/* Graceful: posted work drains, then TCP FIN; DISCONNECTED on both sides. */
IWARP_EXTERN int iwarp_cm_disconnect(struct iwarp_cm_id *id);

/* Take the next event (blocks unless the channel fd is non-blocking: then IWARP_ERR_BUSY). */
IWARP_EXTERN int iwarp_cm_get_event(struct iwarp_cm_channel *ch, struct iwarp_cm_event **ev);
/* Like get_event with a timeout (-1: forever); IWARP_ERR_TIMEDOUT when none came. */
IWARP_EXTERN int iwarp_cm_get_event_timeout(struct iwarp_cm_channel *ch, struct iwarp_cm_event **ev,
                                            int timeout_ms);
IWARP_EXTERN int iwarp_cm_ack_event(struct iwarp_cm_event *ev);

#ifdef __cplusplus
}
#endif
#endif
