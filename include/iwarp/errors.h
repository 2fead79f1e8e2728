/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libiwarp error codes.
 *
 * Every int-returning libiwarp function returns 0 or a negative IWARP_ERR_* value; functions that
 * return sizes return iwarp_ssize (>= 0, or a negative IWARP_ERR_*). One table generates the enum,
 * iwarp_strerror() and iwarp_err_name(). Protocol errors detected on the wire additionally map to
 * an RFC Terminate cause (layer/etype/code); see docs/design.md.
 */
#ifndef IWARP_ERRORS_H
#define IWARP_ERRORS_H

#include "iwarp/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* XX(name, value, message) */
#define IWARP_ERRNO_MAP(XX)                                                                      \
    XX(INVAL, -1, "invalid argument")                                                            \
    XX(NOMEM, -2, "out of memory")                                                               \
    XX(NOSPC, -3, "output buffer too small")                                                     \
    XX(SHORT, -4, "more input bytes are needed")                                                 \
    XX(BUSY, -5, "resource busy")                                                                \
    XX(STATE, -6, "operation not allowed in the current state")                                  \
    XX(TIMEDOUT, -7, "timed out")                                                                \
    XX(NOTSUP, -8, "not supported")                                                              \
    XX(IO, -9, "I/O error")                                                                      \
    XX(PROTO, -10, "protocol violation")                                                         \
    /* MPA connection setup (RFC 5044 §7.1, RFC 6581) */                                        \
    XX(MPA_KEY, -20, "MPA frame does not start with the expected Request/Reply key")             \
    XX(MPA_REV, -21, "unsupported MPA revision")                                                 \
    XX(MPA_PD_LEN, -22, "MPA private data length is over 512 octets or over the local limit")    \
    XX(MPA_ENHANCED, -23, "MPA enhanced (RFC 6581) setting is inconsistent")                     \
    XX(MPA_REJECTED, -24, "the peer rejected the connection")                                    \
    XX(MPA_EARLY_DATA, -25, "the peer sent data before MPA setup allowed it")                    \
    XX(MPA_IRD_ORD, -26, "insufficient IRD/ORD resources (RFC 6581 §9.1)")                       \
    XX(MPA_RTR, -27, "no matching RTR option (RFC 6581 §9.2)")                                   \
    XX(MPA_CRC_REQUIRED, -28, "CRC is required locally but the peer did not agree")              \
    XX(MPA_MARKERS, -29, "marker setting refused")                                               \
    XX(MPA_INIT_INIT, -30, "MPA Request received where a Reply was expected")                    \
    XX(MPA_RTR_MISMATCH, -31, "first FPDU is not a negotiated zero-length RTR")                  \
    XX(MPA_P2P, -32, "peer-to-peer flag A not echoed (RFC 6581 §9.2)")                           \
    XX(MPA_PEER_TERM, -33, "the peer sent a Terminate as its first FPDU")                        \
    /* MPA full operation (RFC 5044 §4-§6) */                                                  \
    XX(FPDU_CRC, -40, "MPA CRC error")                                                           \
    XX(FPDU_MARKER, -41, "MPA marker does not match the FPDU (marker/ULPDU_Length mismatch)")    \
    XX(FPDU_LEN, -42, "MPA ULPDU_Length out of range")                                           \
    /* DDP (RFC 5041) and RDMAP (RFC 5040, RFC 7306) headers */                                  \
    XX(DDP_VERSION, -50, "invalid DDP version")                                                  \
    XX(DDP_HDR_LEN, -51, "DDP segment shorter than its header")                                  \
    XX(DDP_QN, -52, "invalid DDP queue number for this message")                                 \
    XX(RDMAP_VERSION, -53, "invalid RDMAP version")                                              \
    XX(RDMAP_OPCODE, -54, "unexpected RDMAP opcode")                                             \
    XX(RDMAP_LEN, -55, "RDMAP message length is wrong for its opcode")                           \
    XX(RDMAP_LAST, -56, "single-segment RDMAP message without the Last flag")                    \
    XX(RDMAP_TAGGED, -57, "DDP Tagged flag does not match the RDMAP opcode")                     \
    XX(DDP_MO, -58, "non-zero DDP Message Offset on a single-segment RDMAP message")             \
    XX(RDMAP_EXT_OFF, -59, "RFC 7306 operation on a QP that did not enable it (rdmap_ext)")      \
    /* Memory registration and STags (src/mem; RFC 5040 §7.2, RFC 5041 §7.1, RFC 5042) */      \
    XX(STAG_INVALID, -80, "STag not allocated, wrong key, or invalidated")                       \
    XX(STAG_NOT_ASSOC, -81, "STag not associated with this stream (PD or QP mismatch)")          \
    XX(MEM_ACCESS, -82, "access rights violation")                                               \
    XX(MEM_BOUNDS, -83, "base or bounds violation")                                              \
    XX(MEM_TO_WRAP, -84, "Tagged Offset plus length wraps 64 bits")                              \
    XX(STAG_CANT_INVAL, -85, "STag cannot be invalidated")                                       \
    XX(STAG_EXHAUSTED, -86, "no free STag index in the table")                                   \
    XX(STAG_STALE, -87, "new STag key is unchanged or equal to its last valid key")              \
    /* QP receive (src/core, src/ddp: RFC 5040 §5.2.2) */                                       \
    XX(READ_RESP, -90, "RDMA Read Response outside its Read's sink buffer or of wrong size")     \
    XX(ATOMIC_ALIGN, -91, "Atomic Request target not 64-bit aligned (RFC 7306 §8.2)")            \
    XX(ATOMIC_RESP, -92, "Atomic Response not matching the oldest outstanding Atomic Request")   \
    /* Transport and connection management (src/llp/llp_tcp, src/api/cm) */                      \
    XX(CONN_REFUSED, -110, "the peer refused the TCP connection (RST)")                          \
    XX(CONN_RESET, -111, "the TCP connection was reset or failed")                               \
    XX(UNREACHABLE, -112, "no route to the peer, or the TCP connection attempt timed out")       \
    XX(ADDR, -113, "address not usable (in use, not local, or wrong family)")                    \
    /* DDP-level interface (src/api/ddp.c, iwarp/ddp.h) */                                       \
    XX(DDP_QP_MODE, -130, "operation not valid for this QP's mode (DDP-level or verbs)")         \
    XX(DDP_RTR, -131, "peer-to-peer RTR (RFC 6581) is RDMAP-level: not on a DDP-level QP")       \
    /* DDP over SCTP (RFC 5043, RFC 6581 §7: src/session, src/llp/llp_sctp) */                  \
    XX(SCTP_ADAPTATION, -140, "the SCTP peer did not indicate DDP adaptation (RFC 5043 §5.1)")   \
    XX(SCTP_STREAMS, -141, "SCTP inbound and outbound stream counts differ (RFC 5043 §8)")       \
    XX(SCTP_SSN, -142, "DDP-SSN out of sequence, duplicated or too far ahead (RFC 5043 §5.2.1)") \
    XX(SCTP_PPID, -143, "SCTP chunk with an unknown PPID or not unordered (RFC 5043 §5.2, §10)") \
    XX(SCTP_MSGSIZE, -144, "DDP segment larger than the SCTP association allows (RFC 5043 §9)")  \
    XX(SESSION_SEQUENCE, -145, "illegal DDP stream session control sequence (RFC 5043 §6)")      \
    XX(SESSION_FUNCTION, -146,                                                                   \
       "unknown DDP stream session control function code (RFC 5043 §5.2.3)")                     \
    XX(SESSION_REJECTED, -147, "the peer rejected the DDP stream session")                       \
    XX(SESSION_TERMINATED, -148, "the peer terminated the DDP stream session")                   \
    XX(SESSION_PENDING, -149, "too many DDP stream session Initiates pending (RFC 5043 §6.4)")   \
    XX(SCTP_ASSOC_LOST, -150, "the SCTP association was lost or aborted")                        \
    /* iwarp perf (tools/iwarp/perf*.c) */                                                       \
    XX(PERF_PROTO, -165, "iwarp perf: the peer broke the test protocol")                         \
    XX(PERF_VERIFY, -166, "iwarp perf: received data differs from what was sent")                \
    /* Packet trace (src/trace/trace_sink, iwarp_trace_start) */                                 \
    XX(TRACE_BOUND, -170, "packet trace: capture size bound reached, recording stopped")         \
    /* Captures (src/trace: pcap files, packet headers) */                                       \
    XX(PCAP, -70, "libpcap could not open, read or write the capture file")                      \
    XX(PCAP_LINKTYPE, -71, "capture link-layer type not supported")                              \
    XX(PCAP_END, -72, "end of the capture file")                                                 \
    XX(PKT_MALFORMED, -73, "captured packet headers are inconsistent")                           \
    XX(PKT_TOO_BIG, -74, "TCP segment does not fit in one IP packet")                            \
    XX(PKT_CSUM, -75, "IP, TCP, UDP or SCTP checksum does not verify")

/**
 * enum iwarp_err - IWARP_OK and the IWARP_ERR_* codes of IWARP_ERRNO_MAP (negative).
 */
enum iwarp_err {
    IWARP_OK = 0,
#define IWARP_ERR_ENUM(name, value, msg) IWARP_ERR_##name = (value),
    IWARP_ERRNO_MAP(IWARP_ERR_ENUM)
#undef IWARP_ERR_ENUM
};

/**
 * iwarp_strerror - a human-readable message for an IWARP_ERR_* code.
 *
 * Returns: the table's message; "success" for 0; "unknown error" for a value that is no
 *   IWARP_ERR_* code. Never NULL.
 * Ownership: the string is static; never free it.
 * Context: any thread, any time; pure.
 */
IWARP_EXTERN const char *iwarp_strerror(int err);

/**
 * iwarp_err_name - the code's symbolic name, e.g. "IWARP_ERR_FPDU_CRC".
 *
 * Returns: the name; "IWARP_OK" for 0; "IWARP_ERR_UNKNOWN" for a value that is no
 *   IWARP_ERR_* code. Never NULL.
 * Ownership: the string is static; never free it.
 * Context: any thread, any time; pure.
 */
IWARP_EXTERN const char *iwarp_err_name(int err);

#ifdef __cplusplus
}
#endif
#endif
