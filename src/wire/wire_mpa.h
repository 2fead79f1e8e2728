/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * MPA Request/Reply frame codec (RFC 5044 §7.1.1) with the RFC 6581 §9 enhanced connection
 * establishment word. Pure functions over byte spans: no state, no allocation.
 *
 *   0..15  Key "MPA ID Req Frame" / "MPA ID Rep Frame"
 *   16     M 0x80 | C 0x40 | R 0x20 | S 0x10 | Res 0x0F
 *   17     Rev
 *   18..19 PD_Length (big-endian, 0..512, includes the RFC 6581 word when S=1)
 *   20..   Private Data; when S=1 it starts with A|B|IRD(14) C|D|ORD(14) (RFC 6581 §9)
 *
 * Revisions 0 (RDMA Consortium, RFC 5044 App. C), 1 (RFC 5044) and 2 (RFC 6581) are all
 * representable; which ones a connection accepts is decided by src/mpa/mpa_negotiate.h.
 */
#ifndef IWARP_WIRE_WIRE_MPA_H
#define IWARP_WIRE_WIRE_MPA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iwarp/common.h"

/* RTR indication types of RFC 6581 §9.2 as a bit set (not the wire bit positions, which differ
 * between the IRD half-word (B) and the ORD half-word (C, D)). */
enum iwarp_mpa_rtr {
    IWARP_MPA_RTR_SEND = 0x1,  /* B: zero-length FULPDU (Send) */
    IWARP_MPA_RTR_WRITE = 0x2, /* C: zero-length RDMA Write */
    IWARP_MPA_RTR_READ = 0x4,  /* D: zero-length RDMA Read */
};
#define IWARP_MPA_RTR_ALL 0x7u

/* The RFC 6581 §9 enhanced connection establishment data (4 octets, network order). */
struct iwarp_mpa_ird_ord {
    bool p2p;     /* A: peer-to-peer connection model */
    uint8_t rtr;  /* B/C/D as IWARP_MPA_RTR_* bits; always 0 when p2p is false */
    uint16_t ird; /* 14 bits; IWARP_MPA_IRD_ORD_NONE (0x3FFF) = no automatic negotiation */
    uint16_t ord; /* 14 bits; same */
};

/* One MPA Request or Reply frame, in host form. */
struct iwarp_mpa_frame {
    bool reply;                  /* key "MPA ID Rep Frame" (true) or "MPA ID Req Frame" (false) */
    bool m;                      /* markers required in what the sender of this frame receives */
    bool c;                      /* CRC preferred */
    bool r;                      /* Reply only: connection rejected */
    bool s;                      /* RFC 6581 enhanced: private data starts with the IRD/ORD word */
    uint8_t rev;                 /* Rev */
    struct iwarp_mpa_ird_ord v2; /* valid when s */
    const uint8_t *pd;           /* ULP private data (after the RFC 6581 word when s) */
    uint16_t pd_len;             /* its length: PD_Length minus 4 when s */
};

/*
 * Decodes one MPA Request or Reply frame from the start of p.
 * Parameters: p/len: the received bytes (may hold less or more than one frame); out: filled on
 * success (on failure its contents are unspecified).
 * Checks, in order: the key, as soon as its first octets are present (RFC 5044 §7.1.1, §7.1.2
 * rule 5); PD_Length <= 512 (RFC 5044 §7.1.1); S=1 needs Rev >= 2 and PD_Length >= 4 (RFC 6581
 * §6). Res bits are ignored (RFC 5044 §7.1.1); R is ignored in a Request (RFC 5044 §7.1.1);
 * B/C/D are ignored when A=0 (RFC 6581 §9.2). The revision is not judged here.
 * Ownership: out->pd points into p (borrowed; valid as long as p is).
 * Returns: the frame length 20 + PD_Length (bytes after it are not looked at);
 * IWARP_ERR_SHORT when more bytes are needed; IWARP_ERR_MPA_KEY, IWARP_ERR_MPA_PD_LEN,
 * IWARP_ERR_MPA_ENHANCED for a malformed frame; IWARP_ERR_INVAL if p is NULL with len > 0 or
 * out is NULL.
 */
iwarp_ssize iwarp_mpa_frame_decode(const uint8_t *p, size_t len, struct iwarp_mpa_frame *out);

/*
 * Encodes a Request (reply = false), Reply (reply = true, r = false) or Reject (reply and r)
 * into buf. Res bits are sent as zero (RFC 5044 §7.1.1). When s, the RFC 6581 word is written
 * first and PD_Length counts it.
 * Parameters: buf/cap: output; f: the frame (f->pd may be NULL when f->pd_len is 0).
 * Returns: the number of octets written (20 + PD_Length); IWARP_ERR_NOSPC if cap is too small;
 * IWARP_ERR_MPA_PD_LEN if PD_Length would exceed 512; IWARP_ERR_INVAL for an unrepresentable
 * frame (R in a Request, S with Rev < 2, IRD/ORD > 0x3FFF, RTR bits without A, unknown RTR bits,
 * NULL pointers).
 */
iwarp_ssize iwarp_mpa_frame_encode(uint8_t *buf, size_t cap, const struct iwarp_mpa_frame *f);

/*
 * Decodes the 4-octet RFC 6581 §9 word at p into out (B/C/D cleared when A=0, RFC 6581 §9.2).
 * Ownership: nothing kept. No return value; p must hold 4 octets.
 */
void iwarp_mpa_ird_ord_decode(const uint8_t *p, struct iwarp_mpa_ird_ord *out);

/*
 * Encodes the RFC 6581 §9 word into p[0..3] (network order). The caller guarantees
 * ird, ord <= 0x3FFF and rtr within IWARP_MPA_RTR_ALL; B/C/D are written only when p2p.
 */
void iwarp_mpa_ird_ord_encode(uint8_t *p, const struct iwarp_mpa_ird_ord *in);

#endif
