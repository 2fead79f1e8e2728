/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One end-to-end connection over the in-memory transport, deterministic and recorded: two
 * nodes (an STag table whose keys come from a fixed generator, a send and a receive CQ), an
 * RDMAP queue pair engine (core_qp) or a DDP-level stream engine (core_ddp) on each, joined by
 * MPA connections (llp_conn) through llp_mem pipes, and the octets that enter the pipes written
 * through the library's packet trace (trace_conn) as one TCP conversation with fixed addresses,
 * ports, sequence numbers and timestamps. The same calls always give the same capture, octet
 * for octet: what `iwarp demo` runs and what the golden-capture test compares.
 *
 * Side 0 is the MPA initiator (the TCP client), side 1 the responder (the server). Use:
 *   iwarp_llp_e2e_init(); register memory (iwarp_llp_e2e_reg) and post receives through the
 *   engines' own calls (e->side[i].qp or .ddp); iwarp_llp_e2e_connect(); post sends, then
 *   iwarp_llp_e2e_pump() to move everything that can move, and poll the CQs; end with
 *   iwarp_llp_e2e_disconnect() (graceful) or by a Terminate; iwarp_llp_e2e_fini() writes the
 *   rest of the capture and closes it.
 * The pipes split nothing and never fill: each side's octets enter its pipe in the order and
 * pieces the connection hands them out, so the run is a function of the calls alone.
 * For `iwarp demo`: a tap sees every octet that crosses (the capture's octets), an editor
 * damages what a side sends below its engine (iwarp_llp_e2e_editor), and iwarp_llp_e2e_inject()
 * sends segments no engine produces.
 *
 * Everything runs in the caller's thread; nothing allocates. The capture file is the only I/O.
 */
#ifndef IWARP_LLP_LLP_E2E_H
#define IWARP_LLP_LLP_E2E_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/core_cq.h"
#include "core/core_ddp.h"
#include "core/core_qp.h"
#include "llp/llp_conn.h"
#include "llp/llp_mem.h"
#include "mem/mem_stag.h"
#include "mpa/mpa_deframe.h"
#include "mpa/mpa_frame.h"
#include "trace/trace_conn.h"

#define IWARP_LLP_E2E_SQ     64u        /* send queue entries */
#define IWARP_LLP_E2E_RQ     32u        /* receive queue entries (per untagged queue, DDP level) */
#define IWARP_LLP_E2E_CQ     256u       /* each CQ */
#define IWARP_LLP_E2E_STAGS  32u        /* STag table entries per side */
#define IWARP_LLP_E2E_DDP_QN 4u         /* untagged queues of a DDP-level stream */
#define IWARP_LLP_E2E_PD     1u         /* the protection domain of every QP and MR */
#define IWARP_LLP_E2E_PIPE   (1u << 20) /* octets per pipe: more than 16 FPDUs of 64 KiB */
#define IWARP_LLP_E2E_EVENTS 8u         /* async events kept per side */

/* An engine's async event (enum iwarp_event_type; cause as layer << 16 | etype << 8 | code). */
struct iwarp_llp_e2e_event {
    int type;
    uint32_t cause;
    bool from_peer; /* RDMAP: the peer's Terminate */
};

/* Sees every octet that enters pipe `side` (what side sent: the capture's octets). */
typedef void (*iwarp_llp_e2e_tap_fn)(void *user, unsigned side, const uint8_t *p, size_t n);

/* What iwarp_llp_e2e_editor.segment may do to the FPDU framed from the segment it saw. */
#define IWARP_LLP_E2E_BAD_CRC    1u /* flip one bit of its CRC field (RFC 5044 §4.4) */
#define IWARP_LLP_E2E_BAD_MARKER 2u /* make its first marker's FPDUPTR point elsewhere (§4.2) */

/*
 * Fault injection below the engines (a damaged peer, as `iwarp demo --corrupt` shows): what a
 * side's connection writes is taken apart again before it enters the pipe, with the library's
 * own decoders, each MPA frame and each FPDU's DDP segment is shown to these callbacks, which may
 * change it and its length, and the result is framed again by the library's framer (its own
 * stream position, the connection's CRC and marker settings). What no callback changes comes out
 * octet for octet as it went in. Either callback may be NULL.
 */
struct iwarp_llp_e2e_editor {
    /* side's MPA Request or Reply, f[0, *len); room for cap octets. */
    void (*frame)(void *user, unsigned side, uint8_t *f, size_t *len, size_t cap);
    /* side's next DDP segment, seg[0, *len); room for cap octets. Returns IWARP_LLP_E2E_BAD_*
     * bits for its FPDU, or 0. */
    unsigned (*segment)(void *user, unsigned side, uint8_t *seg, uint32_t *len, uint32_t cap);
};

/* Octets an edited MPA frame may take: the 20-octet header and up to 1024 of private data. */
#define IWARP_LLP_E2E_FRAME_MAX (IWARP_MPA_HDR_LEN + 1024u)

/* The editor's state for one direction. Private to llp_e2e.c. */
struct iwarp_llp_e2e_edit {
    uint8_t phase;
    uint32_t frame_len;
    uint8_t frame[IWARP_LLP_E2E_FRAME_MAX];
    struct iwarp_mpa_rx rx;
    struct iwarp_mpa_tx tx;
    uint8_t seg[IWARP_MPA_MULPDU_MAX];
    struct iwarp_mpa_tx_scratch scratch;
    struct iovec out[IWARP_MPA_TX_IOV_MAX(1)];
};

struct iwarp_llp_e2e_cfg {
    /* The MPA connections: [0] the initiator's, [1] the responder's (role, revision, CRC,
     * markers, IRD/ORD, RTR, private data: copied at init), and their EMSS. */
    struct iwarp_llp_conn_cfg conn[2];
    struct iwarp_mpa_neg_answer answer; /* the responder's accept (private data borrowed) */
    bool ddp;                           /* DDP-level engines instead of RDMAP queue pairs */
    uint32_t seed[2];                   /* each side's STag key generator (non-zero) */
    /* The capture (pcap: NULL for none): addresses 127.0.0.1 (::1 with ipv6), the ports, the
     * first packet at time_ns (ns since the Unix epoch, at least 1700000000 s), each PDU's
     * segment 10 us after the last. */
    const char *pcap;
    bool ipv6;
    uint16_t port[2]; /* client, server */
    uint64_t time_ns;
    iwarp_llp_e2e_tap_fn tap;                  /* may be NULL */
    const struct iwarp_llp_e2e_editor *editor; /* may be NULL: nothing edited */
    void *user;                                /* passed to tap and editor */
};

/* One side. Fields are read-only for callers except through the engines' own calls. */
struct iwarp_llp_e2e_side {
    struct iwarp_mem_table mem;
    struct iwarp_mem_entry ent[IWARP_LLP_E2E_STAGS];
    uint32_t rng;
    struct iwarp_wc scq_ring[IWARP_LLP_E2E_CQ], rcq_ring[IWARP_LLP_E2E_CQ];
    struct iwarp_core_cq scq, rcq;
    /* RDMAP (cfg.ddp false) */
    struct iwarp_core_qp qp;
    struct iwarp_core_sqe sq[IWARP_LLP_E2E_SQ];
    struct iwarp_core_rqe rq[IWARP_LLP_E2E_RQ];
    uint64_t rq_lens[IWARP_LLP_E2E_RQ], irq_lens[IWARP_CORE_MAX_IRD];
    struct iwarp_core_orqe orq[IWARP_CORE_MAX_ORD];
    struct iwarp_core_irqe irq[IWARP_CORE_MAX_IRD];
    /* DDP level (cfg.ddp true) */
    struct iwarp_core_ddp ddp;
    struct iwarp_core_ddp_sqe dsq[IWARP_LLP_E2E_SQ];
    struct iwarp_core_ddp_uq duq[IWARP_LLP_E2E_DDP_QN];
    struct iwarp_core_rqe drqe[IWARP_LLP_E2E_DDP_QN * IWARP_LLP_E2E_RQ];
    uint64_t dlens[IWARP_LLP_E2E_DDP_QN * IWARP_LLP_E2E_RQ];
    /* the MPA connection */
    struct iwarp_llp_conn conn;
    uint8_t bounce[IWARP_LLP_CONN_BOUNCE];
    struct iwarp_llp_conn_txf txf[IWARP_LLP_CONN_TX_SEGS];
    /* the engine's first async events, and how many it raised */
    struct iwarp_llp_e2e_event ev[IWARP_LLP_E2E_EVENTS];
    unsigned nev;
    bool fin; /* its end of the stream is in the capture */
};

struct iwarp_llp_e2e {
    struct iwarp_llp_e2e_cfg cfg;
    struct iwarp_llp_e2e_side side[2];
    struct iwarp_llp_mem link;
    uint8_t pipe[2][IWARP_LLP_E2E_PIPE];
    /* the capture */
    struct iwarp_trace_sink *sink;
    struct iwarp_trace_conn tc;
    uint8_t trace_buf[2 * IWARP_TRACE_CONN_BUF];
    uint64_t clock_ns;
    struct iwarp_llp_e2e_edit edit[2]; /* by sending side, with cfg.editor */
    struct iwarp_mpa_tx_scratch inj_scratch;
    struct iovec inj_out[IWARP_MPA_TX_IOV_MAX(1)];
    int err; /* the first driver error (IWARP_ERR_*), 0 when none */
};

/*
 * cfg as `iwarp demo` and the golden captures start from: MPA Rev 2 (RFC 6581) with CRC asked
 * by the initiator, no markers, no peer-to-peer; the responder every RTR type, accepting with
 * IRD/ORD 16/16; EMSS 1460; RDMAP engines; STag seeds 0x2468ace and 0x13579bd; no capture,
 * ports 40001 and 19875 when there is one, IPv4, time 1700000000 s.
 */
void iwarp_llp_e2e_cfg_default(struct iwarp_llp_e2e_cfg *cfg);

/*
 * Set up both sides (STag tables, CQs, engines in IDLE, MPA connections at time 0), the link,
 * and the capture: the file is created and the TCP handshake written.
 * Ownership: cfg is copied (its private data and path are read during the call; the answer's
 * private data is borrowed until iwarp_llp_e2e_connect() returns; tap/user are kept).
 * Returns 0, IWARP_ERR_INVAL (a bad configuration: an engine's or a connection's init error),
 * or the capture's open error (IWARP_ERR_PCAP, IWARP_ERR_NOMEM).
 */
int iwarp_llp_e2e_init(struct iwarp_llp_e2e *e, const struct iwarp_llp_e2e_cfg *cfg);

/*
 * Register addr[0, len) of side's memory as an MR of IWARP_LLP_E2E_PD whose Tagged Offsets
 * start at iova (fixed TOs make fixed captures), with IWARP_MEM_ACCESS_* rights access.
 * Ownership: the memory is borrowed until fini. Returns 0 with *stag, or a mem error.
 */
int iwarp_llp_e2e_reg(struct iwarp_llp_e2e *e, unsigned side, void *addr, uint64_t iova,
                      uint64_t len, uint32_t access, uint32_t *stag);

/*
 * Post one send WR on side's RDMAP engine: opcode op, flags
 * (IWARP_SEND_*), the one SGE *sge (NULL or of length 0: none), the remote buffer raddr/rkey
 * (RDMA Write, RDMA Read), or (Send with Invalidate) rkey the STag to invalidate.
 * Ownership: the SGE's memory is borrowed until the completion. Returns
 * iwarp_core_qp_post_send()'s result.
 */
int iwarp_llp_e2e_post(struct iwarp_llp_e2e *e, unsigned side, uint64_t wr_id,
                       enum iwarp_wr_opcode op, unsigned flags, const struct iwarp_sge *sge,
                       uint64_t raddr, uint32_t rkey);

/*
 * Post a receive of the one SGE *sge on side's engine: its receive queue (RDMAP), or untagged
 * queue qn (DDP level; qn is ignored for RDMAP). Returns the engine's post_recv result.
 */
int iwarp_llp_e2e_post_recv(struct iwarp_llp_e2e *e, unsigned side, uint32_t qn, uint64_t wr_id,
                            const struct iwarp_sge *sge);

/*
 * Post one message on side's DDP-level engine (RFC 5041 §5.2): untagged to queue qn, or tagged
 * to STag stag at Tagged Offset to, with the SGE *sge (NULL: empty) and RsvdULP rsvdulp (5
 * octets untagged, 1 tagged; NULL: zeros). Returns iwarp_core_ddp_post_send()'s result.
 */
int iwarp_llp_e2e_ddp_send(struct iwarp_llp_e2e *e, unsigned side, uint64_t wr_id, bool tagged,
                           uint32_t qn, uint32_t stag, uint64_t to, const struct iwarp_sge *sge,
                           const uint8_t *rsvdulp);

/*
 * The MPA exchange: the Request, the responder's engine attached and the Request accepted with
 * cfg.answer, the Reply, and (peer-to-peer) the RTR; pumped until nothing moves.
 * Returns 0 when the initiator is in full operation, or the error of the side that failed
 * (e.g. IWARP_ERR_MPA_REV when the responder refused the Request); *failed (may be NULL) is set
 * to that side.
 */
int iwarp_llp_e2e_connect(struct iwarp_llp_e2e *e, unsigned *failed);

/*
 * Move octets both ways until nothing moves: engines produce, connections frame and deframe,
 * pipes carry (and the capture records), transports whose connection is done close (the
 * capture records a FIN for each). Returns 0, IWARP_ERR_STATE when the link never quiesces, or
 * the editor's first error (IWARP_ERR_NOSPC: a pipe overflowed; a framer error).
 */
int iwarp_llp_e2e_pump(struct iwarp_llp_e2e *e);

/*
 * A DDP segment that no engine produces (RFC 7306 Immediate Data and Atomics: the engines do
 * not speak RFC 7306) sent by side as if its connection had: framed by side's own MPA framer (its
 * stream position, CRC and markers, so the FPDUs after it stay right), recorded (capture and
 * tap), and fed to the peer's deframer, which checks it (CRC, markers) and goes past it. Neither
 * engine sees it: its MSN and any answer are the caller's business.
 * May be called when nothing moves (after iwarp_llp_e2e_pump()), both connections are in full
 * operation with nothing framed ahead, the responder has seen the initiator's first FPDU, and
 * there is no editor.
 * Ownership: seg is read during the call. Returns 0, IWARP_ERR_STATE when it may not be called
 * now, or the framer's or the peer deframer's error (IWARP_ERR_FPDU_*).
 */
int iwarp_llp_e2e_inject(struct iwarp_llp_e2e *e, unsigned side, const uint8_t *seg, size_t len);

/* Graceful disconnect started by side (RFC 5040 §6.2.1: the send queue drains, then the
 * stream closes), pumped until nothing moves. Returns iwarp_llp_e2e_pump()'s result. */
int iwarp_llp_e2e_disconnect(struct iwarp_llp_e2e *e, unsigned side);

/*
 * Finish the capture (what is still unfinished written as it is) and close the file, then
 * release the engines' memory holds. Returns 0, or the capture's first error (IWARP_ERR_IO).
 */
int iwarp_llp_e2e_fini(struct iwarp_llp_e2e *e);

#endif
