/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A completion queue: a fixed ring of struct iwarp_wc filled by the core and drained by
 * iwarp_poll_cq(), plus the one-shot arm state of ibv_req_notify_cq (ibv_req_notify_cq(3)).
 *
 * Sans-I/O: when an armed CQ gets a completion that satisfies the arm, the core calls the
 * notify hook; the API layer turns that into a completion-channel event. A completion that
 * does not fit is dropped and the CQ is marked overrun (an IWARP_EVENT_CQ_ERR async event,
 * raised once through the same hook), never written past the ring.
 */
#ifndef IWARP_CORE_CORE_CQ_H
#define IWARP_CORE_CORE_CQ_H

#include <stdbool.h>
#include <stdint.h>

#include "iwarp/verbs.h"

struct iwarp_core_cq;

/* Why the notify hook runs. */
enum iwarp_core_cq_why {
    IWARP_CORE_CQ_FIRED = 0,   /* the application's arm fired (one-shot) */
    IWARP_CORE_CQ_OVERRUN = 1, /* the CQ overran for the first time */
    IWARP_CORE_CQ_WAKE = 2,    /* a completion arrived while a waiter asked to be woken */
};

typedef void (*iwarp_core_cq_notify_fn)(void *user, struct iwarp_core_cq *cq,
                                        enum iwarp_core_cq_why why);

enum iwarp_core_cq_arm {
    IWARP_CORE_CQ_DISARMED = 0,
    IWARP_CORE_CQ_ARM_NEXT = 1,
    IWARP_CORE_CQ_ARM_SOLICITED = 2,
};

struct iwarp_core_cq {
    struct iwarp_wc *ring; /* caller-owned, cap entries */
    uint32_t cap;
    uint32_t head;  /* oldest completion */
    uint32_t count; /* completions in the ring */
    uint8_t arm;    /* enum iwarp_core_cq_arm */
    bool overrun;   /* a completion was lost: the CQ is in error */
    bool wake;      /* a waiter (iwarp_cq_wait) wants the next completion, arm or not */
    iwarp_core_cq_notify_fn notify;
    void *notify_user;
};

/*
 * Initialise a CQ over ring[0..cap).
 * Ownership: ring is borrowed for the CQ's lifetime; notify_user is passed back to notify.
 * Returns 0, or IWARP_ERR_INVAL when cap is 0.
 */
int iwarp_core_cq_init(struct iwarp_core_cq *cq, struct iwarp_wc *ring, uint32_t cap,
                       iwarp_core_cq_notify_fn notify, void *notify_user);

/*
 * Append one completion. solicited: a receive of a Send with SE (fires a solicited-only arm;
 * error completions fire it too). Returns 0, or IWARP_ERR_NOSPC when the ring was full (the
 * completion is lost and the CQ is marked overrun).
 */
int iwarp_core_cq_push(struct iwarp_core_cq *cq, const struct iwarp_wc *wc, bool solicited);

/* Move up to max completions to out. Returns how many. */
uint32_t iwarp_core_cq_poll(struct iwarp_core_cq *cq, struct iwarp_wc *out, uint32_t max);

/* Arm for the next completion (solicited_only false) or the next solicited/error one. */
void iwarp_core_cq_arm(struct iwarp_core_cq *cq, bool solicited_only);

/* Free ring slots. */
static inline uint32_t iwarp_core_cq_room(const struct iwarp_core_cq *cq)
{
    return cq->cap - cq->count;
}

#endif
