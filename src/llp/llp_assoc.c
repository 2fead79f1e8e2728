/* SPDX-License-Identifier: BSD-2-Clause */
/* DDP streams of one SCTP association (RFC 5043 §5-§10), sans I/O. See llp_assoc.h. */
#include "llp/llp_assoc.h"

#include <string.h>

#include "iwarp/errors.h"

/* A held chunk is {ptr, len}; the window never looks inside. Control chunks are told apart
 * from segments by this bit of len (a chunk never comes near 2^63 octets). */
#define CHUNK_CTL     ((size_t)1 << (sizeof(size_t) * 8u - 1u))
/* A chunk sent ordered (U=0, §10): it holds its DDP-SSN's place and ends the session there. */
#define CHUNK_ORDERED ((size_t)1 << (sizeof(size_t) * 8u - 2u))

static uint16_t window(const struct iwarp_llp_assoc *a)
{
    return a->cfg.window ? a->cfg.window : IWARP_LLP_ASSOC_WINDOW;
}

static void give_back(struct iwarp_llp_assoc *a, void *ptr)
{
    if (ptr && a->cfg.chunk_free)
        a->cfg.chunk_free(ptr);
}

/* A free stream's fields (its receive window aside): no session, no deadline. */
static void stream_clear(struct iwarp_llp_assoc_stream *st)
{
    struct iwarp_sess_ssn_rx rx = st->ssn_rx;
    memset(st, 0, sizeof *st);
    st->ssn_rx = rx;
    st->deadline = UINT64_MAX;
    st->ending_until = UINT64_MAX;
    iwarp_sess_ssn_tx_init(&st->ssn_tx); /* §6.1: DDP-SSN 0 at each session start */
}

static void stream_reset(struct iwarp_llp_assoc *a, uint16_t sid)
{
    struct iwarp_llp_assoc_stream *st = &a->st[sid];
    struct iwarp_sess_chunk c;
    while (iwarp_sess_ssn_rx_drain(&st->ssn_rx, &c))
        give_back(a, c.ptr);
    stream_clear(st);
    (void)iwarp_sess_ssn_rx_reset(&st->ssn_rx);
    while (a->hi > 0 && a->st[a->hi - 1].state == IWARP_LLP_ASSOC_FREE)
        a->hi--;
}

/* A free stream gets a session: the scans of the streams reach it (a->hi). */
static void stream_open(struct iwarp_llp_assoc *a, struct iwarp_llp_assoc_stream *st)
{
    uint16_t sid = (uint16_t)(st - a->st);
    st->state = IWARP_LLP_ASSOC_SESSION;
    if (sid >= a->hi)
        a->hi = (uint16_t)(sid + 1u);
}

/* Whether the owner's in-flight cap holds chunks back now. */
static bool at_cap(const struct iwarp_llp_assoc *a)
{
    return a->cfg.inflight_max != 0 && a->inflight >= a->cfg.inflight_max;
}

/* A detached stream is released once its session is over and nothing of it waits to be sent
 * (a Reject, our Terminate: §6.2, §6.3), or at once when a deadline of it passed. */
static bool releasable(const struct iwarp_llp_assoc *a, uint16_t sid)
{
    const struct iwarp_llp_assoc_stream *st = &a->st[sid];
    bool unsent = a->has_pend && a->pend.sid == sid;
    return st->detached && (st->expired || (st->state == IWARP_LLP_ASSOC_OVER && !unsent));
}

/* Release the detached streams that are done (at the end of every call that may end one). */
static void reap(struct iwarp_llp_assoc *a)
{
    if (!a->reap)
        return;
    a->reap = false;
    for (uint16_t i = 0; i < a->hi; i++)
        if (releasable(a, i))
            iwarp_llp_assoc_release(a, i);
}

int iwarp_llp_assoc_init(struct iwarp_llp_assoc *a, const struct iwarp_llp_assoc_cfg *cfg,
                         struct iwarp_llp_assoc_stream *streams, struct iwarp_sess_ssn_slot *slots)
{
    /* §9: the maximum DDP segment is at least 516 octets (a control message fits). */
    if (!a || !cfg || !streams || !slots || cfg->nstreams == 0 ||
        cfg->max_seg < IWARP_SCTP_CTL_MAX || cfg->window > IWARP_SCTP_SSN_AHEAD_MAX ||
        (cfg->passive && !cfg->passive_sess.pending))
        return IWARP_ERR_INVAL;
    memset(a, 0, sizeof *a);
    a->cfg = *cfg;
    a->st = streams;
    a->slots = slots;
    uint16_t w = window(a);
    for (uint16_t i = 0; i < cfg->nstreams; i++) {
        memset(&streams[i], 0, sizeof streams[i]);
        int rc = iwarp_sess_ssn_rx_init(&streams[i].ssn_rx, slots + (size_t)i * w, w);
        if (rc != 0)
            return rc;
        stream_clear(&streams[i]);
    }
    return 0;
}

int iwarp_llp_assoc_free_stream(const struct iwarp_llp_assoc *a)
{
    for (uint16_t i = 0; i < a->hi; i++)
        if (a->st[i].state == IWARP_LLP_ASSOC_FREE)
            return i;
    return a->hi < a->cfg.nstreams ? a->hi : -1; /* every stream from hi on is FREE */
}

uint32_t iwarp_llp_assoc_in_use(const struct iwarp_llp_assoc *a)
{
    uint32_t n = 0;
    for (uint16_t i = 0; i < a->hi; i++)
        n += a->st[i].state != IWARP_LLP_ASSOC_FREE;
    return n;
}

uint32_t iwarp_llp_assoc_take_events(struct iwarp_llp_assoc *a, uint16_t sid)
{
    if (sid >= a->cfg.nstreams)
        return 0;
    uint32_t ev = a->st[sid].events;
    a->st[sid].events = 0;
    return ev;
}

/* The session ended: OVER (CLOSED reported) once nothing more is to be exchanged: our
 * Terminate handed out and the peer's received, or nothing of ours will be sent. Handed out
 * means given to SCTP (tx_done): a last chunk (Reject, Terminate) still waiting in a->pend for
 * room would be lost if the owner released the stream on CLOSED (§6.2, §6.3). */
static void settle_end(struct iwarp_llp_assoc *a, struct iwarp_llp_assoc_stream *st)
{
    if (st->state != IWARP_LLP_ASSOC_ENDING)
        return;
    const struct iwarp_sess_result *r = iwarp_sess_ctl_result(&st->ctl);
    bool unsent = a->has_pend && &a->st[a->pend.sid] == st;
    bool ours_done = (r->term_sent || !iwarp_sess_ctl_tx_pending(&st->ctl)) && !unsent;
    bool theirs_done = r->term_rcvd || !r->term_sent || st->peer_done;
    if (ours_done && theirs_done) {
        st->state = IWARP_LLP_ASSOC_OVER;
        st->events |= IWARP_LLP_ASSOC_EV_CLOSED;
        a->reap = true;
    }
}

/* Withdraw the chunk produced for stream sid and not sent (its engine is going away). */
static void drop_pending(struct iwarp_llp_assoc *a, uint16_t sid)
{
    if (!a->has_pend || a->pend.sid != sid)
        return;
    a->has_pend = false;
    iwarp_sess_ssn_tx_untake(&a->st[sid].ssn_tx);
}

/* The session ended: a REQUEST the owner has not taken yet is withdrawn with it (nothing
 * awaits accept()/reject() any more); the owner learns of the stream by its CLOSED. */
static void withdraw_request(struct iwarp_llp_assoc_stream *st)
{
    st->events &= ~(uint32_t)IWARP_LLP_ASSOC_EV_REQUEST;
}

/* §6.4: Initiate, Terminate is a whole sequence. A Terminate of ours that answers the peer's
 * Initiate (passive, nothing else of ours sent in the session) is not answered: the peer may
 * start another session on the stream at once (§6.6), so we do not wait for more of it. */
static void note_initiate_answered(struct iwarp_llp_assoc_stream *st)
{
    if (st->ctl.cfg.role == IWARP_SESS_PASSIVE && !st->ctl.tx_any)
        st->peer_done = true;
}

/* The peer's Terminate answered our Initiate (its first chunk of the session, §6.4): the
 * sequence is complete and is not answered. Any later Terminate is answered (§6.2). */
static bool terminate_answers_our_initiate(const struct iwarp_llp_assoc_stream *st)
{
    return st->ctl.cfg.role == IWARP_SESS_ACTIVE && st->ctl.rx_next == 1;
}

/* Close the engine once (flush; graceful: no fatal event). A segment of it produced and not
 * yet sent is withdrawn: its payload belongs to a WR the flush just handed back to the ULP,
 * and its DDP-SSN goes to the next chunk (our Terminate), so the peer sees no gap (§6). */
static void engine_closed(struct iwarp_llp_assoc *a, struct iwarp_llp_assoc_stream *st,
                          bool graceful)
{
    uint16_t sid = (uint16_t)(st - a->st);
    if (a->has_pend && a->pend.sid == sid && a->pend.is_seg)
        drop_pending(a, sid);
    iwarp_core_eng_llp_closed(st->eng, graceful); /* nothing when none is attached */
    st->eng = NULL;
    st->started = false;
}

/* Start the engine with the session's IRD/ORD (RFC 6581 §9.1), or the ULP's when the session
 * left them open (0x3FFF: no enhanced exchange). */
static int engine_start(struct iwarp_llp_assoc_stream *st)
{
    const struct iwarp_sess_result *r = iwarp_sess_ctl_result(&st->ctl);
    uint32_t ird = r->ird == IWARP_MPA_IRD_ORD_NONE ? st->ird : r->ird;
    uint32_t ord = r->ord == IWARP_MPA_IRD_ORD_NONE ? st->ord : r->ord;
    int rc = iwarp_core_eng_start(st->eng, ird, ord);
    st->started = rc == 0;
    return rc;
}

/* Turn the session machine's events into the stream's (after every session call). */
static void after_session(struct iwarp_llp_assoc *a, struct iwarp_llp_assoc_stream *st)
{
    uint32_t ev = iwarp_sess_ctl_events(&st->ctl);
    if (ev & IWARP_SESS_EV_REQUEST)
        st->events |= IWARP_LLP_ASSOC_EV_REQUEST;
    if ((ev & IWARP_SESS_EV_ESTABLISHED) && st->eng && !st->started) {
        if (engine_start(st) != 0) {
            (void)iwarp_sess_ctl_terminate(&st->ctl);
            ev |= IWARP_SESS_EV_TERMINATED;
        } else {
            st->events |= IWARP_LLP_ASSOC_EV_ESTABLISHED;
            st->deadline = UINT64_MAX; /* established in time */
        }
    }
    if (ev & IWARP_SESS_EV_REJECTED) {
        /* §6.3: the session is over; there is nothing to answer */
        const struct iwarp_sess_result *r = iwarp_sess_ctl_result(&st->ctl);
        st->err = r->err ? r->err : IWARP_ERR_SESSION_REJECTED;
        engine_closed(a, st, true);
        /* Our reject(): the Reject is still to be sent (§6.3), so the stream is ENDING until
         * it is handed to SCTP; settle_end() then reports CLOSED. */
        st->state =
            iwarp_sess_ctl_tx_pending(&st->ctl) ? IWARP_LLP_ASSOC_ENDING : IWARP_LLP_ASSOC_OVER;
        st->events |= IWARP_LLP_ASSOC_EV_REJECTED;
        a->reap = true;
    }
    if ((ev & IWARP_SESS_EV_TERMINATED) && st->state == IWARP_LLP_ASSOC_SESSION) {
        const struct iwarp_sess_result *r = iwarp_sess_ctl_result(&st->ctl);
        withdraw_request(st);
        st->err = r->err;
        /* The peer's Terminate after its stream drained is its orderly close (§6.2), like a
         * FIN at a message boundary; a failure of the session is not. */
        st->graceful = r->err == 0 || r->err == IWARP_ERR_SESSION_TERMINATED;
        engine_closed(a, st, st->graceful);
        if (r->term_rcvd && !r->term_sent && !terminate_answers_our_initiate(st))
            (void)iwarp_sess_ctl_terminate(&st->ctl); /* answer it (§6.2) */
        else if (!r->term_rcvd)
            note_initiate_answered(st);
        st->state = IWARP_LLP_ASSOC_ENDING;
    }
    settle_end(a, st);
}

int iwarp_llp_assoc_open(struct iwarp_llp_assoc *a, uint16_t sid, const struct iwarp_sess_cfg *cfg,
                         struct iwarp_core_engine *eng, uint32_t ird, uint32_t ord, void *user)
{
    if (!a || !cfg || sid >= a->cfg.nstreams || cfg->role != IWARP_SESS_ACTIVE)
        return IWARP_ERR_INVAL;
    if (a->lost)
        return IWARP_ERR_STATE;
    struct iwarp_llp_assoc_stream *st = &a->st[sid];
    if (st->state != IWARP_LLP_ASSOC_FREE)
        return IWARP_ERR_BUSY;
    int rc = iwarp_sess_ctl_init(&st->ctl, cfg);
    if (rc != 0)
        return rc;
    stream_open(a, st);
    st->eng = eng;
    st->ird = ird;
    st->ord = ord;
    st->user = user;
    return 0;
}

static struct iwarp_llp_assoc_stream *session_of(struct iwarp_llp_assoc *a, uint16_t sid)
{
    if (!a || sid >= a->cfg.nstreams || a->st[sid].state == IWARP_LLP_ASSOC_FREE)
        return NULL;
    return &a->st[sid];
}

int iwarp_llp_assoc_accept(struct iwarp_llp_assoc *a, uint16_t sid,
                           const struct iwarp_sess_answer *ans, struct iwarp_core_engine *eng,
                           uint32_t ird, uint32_t ord)
{
    struct iwarp_llp_assoc_stream *st = session_of(a, sid);
    if (!st || st->state != IWARP_LLP_ASSOC_SESSION)
        return IWARP_ERR_STATE;
    st->eng = eng;
    st->ird = ird;
    st->ord = ord;
    int rc = iwarp_sess_ctl_accept(&st->ctl, ans);
    if (rc != 0) {
        st->eng = NULL;
        return rc;
    }
    after_session(a, st); /* ESTABLISHED: the engine starts; RFC 6581 §7: it may send first */
    rc = st->started ? 0 : (st->err ? st->err : IWARP_ERR_STATE);
    reap(a);
    return rc;
}

int iwarp_llp_assoc_reject(struct iwarp_llp_assoc *a, uint16_t sid,
                           const struct iwarp_sess_answer *ans)
{
    struct iwarp_llp_assoc_stream *st = session_of(a, sid);
    if (!st || st->state != IWARP_LLP_ASSOC_SESSION)
        return IWARP_ERR_STATE;
    int rc = iwarp_sess_ctl_reject(&st->ctl, ans);
    if (rc == 0)
        after_session(a, st);
    st->events &= ~(uint32_t)IWARP_LLP_ASSOC_EV_REJECTED; /* the owner knows: it rejected */
    reap(a);
    return rc;
}

void iwarp_llp_assoc_abort(struct iwarp_llp_assoc *a, uint16_t sid)
{
    struct iwarp_llp_assoc_stream *st = session_of(a, sid);
    if (!st)
        return;
    if (a->has_pend && a->pend.sid == sid && a->pend.is_seg)
        drop_pending(a, sid);
    st->eng = NULL; /* the owner flushes it; we never touch it again */
    st->started = false;
    if (st->state != IWARP_LLP_ASSOC_SESSION)
        return;
    (void)iwarp_sess_ctl_terminate(&st->ctl); /* §6: ends the session from our side */
    (void)iwarp_sess_ctl_events(&st->ctl);
    note_initiate_answered(st);
    st->err = IWARP_ERR_SESSION_TERMINATED;
    st->state = IWARP_LLP_ASSOC_ENDING;
    settle_end(a, st);
    reap(a);
}

/* now_ns + ns, saturated; ns 0: never. */
static uint64_t after_ns(uint64_t now_ns, uint64_t ns)
{
    return ns == 0 || now_ns > UINT64_MAX - ns ? UINT64_MAX : now_ns + ns;
}

void iwarp_llp_assoc_disconnect(struct iwarp_llp_assoc *a, uint16_t sid, uint64_t now_ns)
{
    struct iwarp_llp_assoc_stream *st = session_of(a, sid);
    if (!st)
        return;
    st->deadline = after_ns(now_ns, a->cfg.linger_ns); /* how long the close may take */
    if (st->state != IWARP_LLP_ASSOC_SESSION)
        return;
    if (!st->started) {
        iwarp_llp_assoc_abort(a, sid); /* never established: nothing to drain */
        return;
    }
    st->graceful = true;
    iwarp_core_eng_disconnect(st->eng); /* drains; produce() sends our Terminate after it */
}

void iwarp_llp_assoc_release(struct iwarp_llp_assoc *a, uint16_t sid)
{
    if (!a || sid >= a->cfg.nstreams)
        return;
    if (a->has_pend && a->pend.sid == sid)
        a->has_pend = false; /* the stream starts over at DDP-SSN 0 */
    struct iwarp_llp_assoc_stream *st = &a->st[sid];
    if (st->state == IWARP_LLP_ASSOC_SESSION || st->state == IWARP_LLP_ASSOC_ENDING)
        iwarp_sess_ctl_lost(&st->ctl); /* a pending Initiate leaves the pending count */
    stream_reset(a, sid);
}

void iwarp_llp_assoc_detach(struct iwarp_llp_assoc *a, uint16_t sid)
{
    if (!a || sid >= a->cfg.nstreams || a->st[sid].state == IWARP_LLP_ASSOC_FREE)
        return;
    struct iwarp_llp_assoc_stream *st = &a->st[sid];
    st->detached = true;
    st->user = NULL;
    st->deadline = UINT64_MAX; /* the owner's deadlines go with it; the linger stays */
    if (releasable(a, sid))
        iwarp_llp_assoc_release(a, sid);
}

void iwarp_llp_assoc_set_deadline(struct iwarp_llp_assoc *a, uint16_t sid, uint64_t deadline_ns)
{
    if (a && sid < a->cfg.nstreams && a->st[sid].state != IWARP_LLP_ASSOC_FREE)
        a->st[sid].deadline = deadline_ns;
}

/* ---- receive ------------------------------------------------------------------------------ */

static int fail_stream(struct iwarp_llp_assoc *a, struct iwarp_llp_assoc_stream *st, int err);

/* One chunk in DDP-SSN order. Returns 0 or the error that ended the session. */
static int process(struct iwarp_llp_assoc *a, struct iwarp_llp_assoc_stream *st,
                   struct iwarp_sess_chunk c)
{
    const uint8_t *p = c.ptr;
    size_t len = c.len & ~(CHUNK_CTL | CHUNK_ORDERED);
    int rc = 0;
    if (c.len & CHUNK_ORDERED) {
        /* §10 "MUST use the Unordered option": no legal pattern has it (§6.1) */
        give_back(a, c.ptr);
        return fail_stream(a, st, IWARP_ERR_SCTP_PPID);
    }
    if (c.len & CHUNK_CTL) {
        rc = iwarp_sess_ctl_rx_ctl(&st->ctl, p, len);
        if (rc == IWARP_ERR_STATE) {
            /* over already: ignored (a first Terminate is still noted). A Reject to our
             * Initiate that crossed our Terminate (abort()) is the peer's final chunk: §6.3's
             * sequence ends there and no Terminate of the peer's follows. */
            uint16_t fc = 0;
            if (len >= IWARP_SCTP_CTL_HDR_LEN)
                fc = (uint16_t)(p[2] << 8 | p[3]);
            if (st->ctl.cfg.role == IWARP_SESS_ACTIVE &&
                (fc == IWARP_SCTP_FC_REJECT || fc == IWARP_SCTP_FC_ENH_REJECT))
                st->peer_done = true;
            rc = 0;
        }
    } else {
        rc = iwarp_sess_ctl_rx_seg(&st->ctl, (uint16_t)((p[0] << 8) | p[1]));
        if (rc == 0 && st->started)
            (void)iwarp_core_eng_rx_segment(st->eng, p + IWARP_SCTP_SSN_LEN,
                                            len - IWARP_SCTP_SSN_LEN);
        else if (rc == IWARP_ERR_STATE)
            rc = 0; /* §6.2: the peer's segments in flight after the session ended */
    }
    give_back(a, c.ptr);
    after_session(a, st);
    return rc;
}

/* Open a passive session on a free stream for an incoming Initiate (§6.2). */
static int open_passive(struct iwarp_llp_assoc *a, struct iwarp_llp_assoc_stream *st)
{
    int rc = iwarp_sess_ctl_init(&st->ctl, &a->cfg.passive_sess);
    if (rc == 0)
        stream_open(a, st);
    return rc;
}

/* The peer broke the session (§6.1 "the DDP Stream Session MUST be terminated"): our Terminate
 * goes out, the engine closes abortively. Returns err. */
static int fail_stream(struct iwarp_llp_assoc *a, struct iwarp_llp_assoc_stream *st, int err)
{
    if (st->state != IWARP_LLP_ASSOC_SESSION)
        return err;
    withdraw_request(st);
    (void)iwarp_sess_ctl_terminate(&st->ctl);
    (void)iwarp_sess_ctl_events(&st->ctl);
    note_initiate_answered(st);
    st->err = err;
    st->graceful = false;
    engine_closed(a, st, false);
    st->state = IWARP_LLP_ASSOC_ENDING;
    settle_end(a, st);
    return err;
}

static int rx_chunk(struct iwarp_llp_assoc *a, uint16_t sid, uint32_t ppid, bool unordered,
                    void *buf, size_t len)
{
    int kind = iwarp_sctp_chunk_kind(ppid, true); /* §5.2 PPIDs */
    int ssn = iwarp_sctp_ssn_peek(buf, len);
    struct iwarp_llp_assoc_stream *st = sid < a->cfg.nstreams ? &a->st[sid] : NULL;
    bool live = st && (st->state == IWARP_LLP_ASSOC_SESSION || st->state == IWARP_LLP_ASSOC_ENDING);
    if (a->lost || !st || kind < 0 || ssn < 0 || (!unordered && !live)) {
        a->rx_dropped++;
        give_back(a, buf);
        /* §6.1: a chunk of no legal pattern on a stream with a session (another PPID, whose
         * octets are no DDP-SSN, or none at all) ends the session; an ordered chunk (§10) where
         * no session is opens none */
        int err = kind < 0     ? kind
                  : ssn < 0    ? ssn
                  : !unordered ? IWARP_ERR_SCTP_PPID
                               : IWARP_ERR_INVAL;
        if (!a->lost && st)
            (void)fail_stream(a, st, err);
        return err;
    }
    /* A segment chunk with no DDP segment after its DDP-SSN takes its place in the sequence:
     * the engine rejects it as a DDP error (RFC 5041 §7.1) and says so to the peer. So does an
     * ordered chunk of DDP's PPIDs: the peer counted it (§5.2.1), and its session ends when its
     * turn comes (process()), while the chunks after it, the peer's Terminate, still arrive. */
    if (st->state == IWARP_LLP_ASSOC_FREE && kind == IWARP_SCTP_PPID_DDP_CONTROL &&
        a->cfg.passive && open_passive(a, st) != 0) {
        a->rx_dropped++;
        give_back(a, buf);
        return IWARP_ERR_INVAL;
    }
    if (st->state == IWARP_LLP_ASSOC_FREE || st->state == IWARP_LLP_ASSOC_OVER) {
        a->rx_dropped++; /* no session on this stream: nobody to deliver to */
        give_back(a, buf);
        return 0;
    }
    struct iwarp_sess_chunk c = {.ptr = buf,
                                 .len = len |
                                        (kind == IWARP_SCTP_PPID_DDP_CONTROL ? CHUNK_CTL : 0) |
                                        (unordered ? 0 : CHUNK_ORDERED)};
    int v = iwarp_sess_ssn_rx_accept(&st->ssn_rx, (uint16_t)ssn, c);
    if (v < 0) {
        /* §6.1: no repeats, no gaps beyond what we can hold; §10: an invalid DDP-SSN MAY end
         * the stream. The session fails; the peer gets our Terminate. */
        a->rx_dropped++;
        give_back(a, buf);
        return fail_stream(a, st, v);
    }
    if (v == IWARP_SESS_SSN_HELD)
        return 0;
    int rc = process(a, st, c);
    while (iwarp_sess_ssn_rx_next(&st->ssn_rx, &c)) {
        int r = process(a, st, c);
        if (rc == 0)
            rc = r;
    }
    return rc;
}

int iwarp_llp_assoc_rx_chunk(struct iwarp_llp_assoc *a, uint16_t sid, uint32_t ppid, bool unordered,
                             void *buf, size_t len)
{
    int rc = rx_chunk(a, sid, ppid, unordered, buf, len);
    reap(a);
    return rc;
}

/* ---- transmit ----------------------------------------------------------------------------- */

static void build_ctl(struct iwarp_llp_assoc *a, uint16_t sid, size_t n)
{
    struct iwarp_llp_assoc_chunk *ch = &a->pend;
    ch->sid = sid;
    ch->ppid = IWARP_SCTP_PPID_DDP_CONTROL;
    ch->is_seg = false;
    ch->iov[0] = (struct iovec){.iov_base = ch->ctl, .iov_len = n};
    ch->niov = 1;
    ch->len = n;
}

static void build_seg(struct iwarp_llp_assoc *a, uint16_t sid, uint16_t ssn)
{
    struct iwarp_llp_assoc_chunk *ch = &a->pend;
    ch->sid = sid;
    ch->ppid = IWARP_SCTP_PPID_DDP_SEGMENT;
    ch->is_seg = true;
    (void)iwarp_sctp_ssn_encode(ch->ssn, sizeof ch->ssn, ssn); /* §5.2.1: before the segment */
    ch->iov[0] = (struct iovec){.iov_base = ch->ssn, .iov_len = IWARP_SCTP_SSN_LEN};
    ch->iov[1] = (struct iovec){.iov_base = ch->seg.hdr, .iov_len = ch->seg.hdr_len};
    ch->niov = 2;
    ch->len = IWARP_SCTP_SSN_LEN + ch->seg.hdr_len;
    for (uint32_t i = 0; i < ch->seg.niov; i++) {
        if (ch->seg.iov[i].iov_len == 0)
            continue;
        ch->iov[ch->niov++] = ch->seg.iov[i];
        ch->len += ch->seg.iov[i].iov_len;
    }
}

/* Produce stream sid's next chunk into a->pend. Returns true when one was produced. */
static bool produce_stream(struct iwarp_llp_assoc *a, uint16_t sid)
{
    struct iwarp_llp_assoc_stream *st = &a->st[sid];
    if (st->state != IWARP_LLP_ASSOC_SESSION && st->state != IWARP_LLP_ASSOC_ENDING)
        return false;
    for (int pass = 0; pass < 2; pass++) {
        if (iwarp_sess_ctl_tx_pending(&st->ctl)) {
            iwarp_ssize n =
                iwarp_sess_ctl_tx(&st->ctl, &st->ssn_tx, a->pend.ctl, sizeof a->pend.ctl);
            if (n > 0) {
                build_ctl(a, sid, (size_t)n);
                return true;
            }
            return false; /* BUSY: §10's bound; an acknowledgement lets it go */
        }
        if (!st->started || !iwarp_sess_ctl_may_send_seg(&st->ctl))
            return false;
        if (st->ssn_tx.unacked >= IWARP_SCTP_SSN_AHEAD_MAX)
            return false; /* §10 */
        if (iwarp_core_eng_tx_next(st->eng, a->cfg.max_seg, &a->pend.seg) == 1) {
            int ssn = iwarp_sess_ssn_tx_take(&st->ssn_tx);
            build_seg(a, sid, (uint16_t)ssn);
            return true;
        }
        if (!iwarp_core_eng_tx_close(st->eng))
            return false;
        /* §6.2: the engine has sent its last segment (an RDMAP Terminate, or a drained
         * graceful close): our session Terminate follows it */
        (void)iwarp_sess_ctl_terminate(&st->ctl);
        (void)iwarp_sess_ctl_events(&st->ctl);
        engine_closed(a, st, st->graceful);
        st->state = IWARP_LLP_ASSOC_ENDING;
    }
    return false;
}

/* Produce the next chunk of the streams, round robin, into a->pend. */
static void produce(struct iwarp_llp_assoc *a)
{
    for (uint16_t i = 0; i < a->hi; i++) {
        uint16_t sid = (uint16_t)((a->rr + i) % a->hi);
        if (produce_stream(a, sid)) {
            a->rr = (uint16_t)(sid + 1u); /* taken modulo hi, which may have changed by then */
            a->has_pend = true;
            return;
        }
        settle_end(a, &a->st[sid]);
    }
}

const struct iwarp_llp_assoc_chunk *iwarp_llp_assoc_tx_next(struct iwarp_llp_assoc *a)
{
    if (a->lost)
        return NULL;
    if (!a->has_pend)
        produce(a);
    reap(a);
    /* at the cap the chunk stays produced until SCTP's count lets it go (tx_capped) */
    return a->has_pend && !at_cap(a) ? &a->pend : NULL;
}

void iwarp_llp_assoc_tx_done(struct iwarp_llp_assoc *a)
{
    if (!a->has_pend)
        return;
    a->has_pend = false;
    if (a->cfg.inflight_max)
        a->inflight++;
    struct iwarp_llp_assoc_stream *st = &a->st[a->pend.sid];
    if (a->pend.is_seg) {
        if (st->started)
            iwarp_core_eng_tx_sent(st->eng, &a->pend.seg);
    } else {
        a->reap = true;       /* a detached stream's last chunk may be out */
        after_session(a, st); /* our Terminate may have ended the exchange */
    }
    reap(a);
}

bool iwarp_llp_assoc_tx_capped(const struct iwarp_llp_assoc *a)
{
    return !a->lost && a->has_pend && at_cap(a);
}

bool iwarp_llp_assoc_tx_ready(const struct iwarp_llp_assoc *a)
{
    if (a->lost || at_cap(a))
        return false;
    if (a->has_pend)
        return true;
    for (uint16_t i = 0; i < a->hi; i++) {
        const struct iwarp_llp_assoc_stream *st = &a->st[i];
        if (st->state != IWARP_LLP_ASSOC_SESSION && st->state != IWARP_LLP_ASSOC_ENDING)
            continue;
        if (iwarp_sess_ctl_tx_pending(&st->ctl))
            return true;
        if (st->started && iwarp_sess_ctl_may_send_seg(&st->ctl) &&
            (iwarp_core_eng_tx_pending(st->eng) || iwarp_core_eng_tx_close(st->eng)))
            return true;
    }
    return false;
}

void iwarp_llp_assoc_unacked(struct iwarp_llp_assoc *a, uint32_t unacked)
{
    for (uint16_t i = 0; i < a->hi; i++) {
        struct iwarp_sess_ssn_tx *tx = &a->st[i].ssn_tx;
        if (tx->unacked > unacked)
            iwarp_sess_ssn_tx_acked(tx, tx->unacked - unacked);
    }
    if (a->cfg.inflight_max) {
        a->inflight = unacked;
        a->cap_blocked = at_cap(a); /* a SACK (packets_in) lets it go on */
    }
}

bool iwarp_llp_assoc_packets_in(struct iwarp_llp_assoc *a)
{
    bool was = a->cap_blocked;
    a->cap_blocked = false;
    return was;
}

/* ---- time --------------------------------------------------------------------------------- */

/* A stream that began ending waits at most cfg.linger_ns for the peer's Terminate from now
 * (§6.2 does not oblige the peer to answer ours); one that no longer ends waits for nothing. */
static void stamp(const struct iwarp_llp_assoc *a, struct iwarp_llp_assoc_stream *st,
                  uint64_t now_ns)
{
    if (st->state != IWARP_LLP_ASSOC_ENDING)
        st->ending_until = UINT64_MAX;
    else if (st->ending_until == UINT64_MAX)
        st->ending_until = after_ns(now_ns, a->cfg.linger_ns);
}

uint64_t iwarp_llp_assoc_next_timeout(const struct iwarp_llp_assoc *a)
{
    uint64_t t = UINT64_MAX;
    for (uint16_t i = 0; i < a->hi; i++) {
        const struct iwarp_llp_assoc_stream *st = &a->st[i];
        if (st->state == IWARP_LLP_ASSOC_FREE || st->state == IWARP_LLP_ASSOC_OVER || st->expired)
            continue;
        if (st->state == IWARP_LLP_ASSOC_ENDING && st->ending_until == UINT64_MAX &&
            a->cfg.linger_ns)
            return 0; /* its linger starts at the next handle_timeout() */
        if (st->ending_until < t)
            t = st->ending_until;
        if (st->deadline < t)
            t = st->deadline;
    }
    return t;
}

bool iwarp_llp_assoc_handle_timeout(struct iwarp_llp_assoc *a, uint64_t now_ns)
{
    bool reported = false;
    for (uint16_t i = 0; i < a->hi; i++) {
        struct iwarp_llp_assoc_stream *st = &a->st[i];
        if (st->state == IWARP_LLP_ASSOC_FREE || st->state == IWARP_LLP_ASSOC_OVER || st->expired)
            continue; /* an OVER stream's CLOSED is its end; an expired one's TIMEDOUT */
        stamp(a, st, now_ns);
        if (st->ending_until > now_ns && st->deadline > now_ns)
            continue;
        st->ending_until = UINT64_MAX;
        st->deadline = UINT64_MAX;
        if (st->detached) {
            iwarp_llp_assoc_release(a, i); /* nobody waits for it: free again */
            continue;
        }
        if (st->state == IWARP_LLP_ASSOC_SESSION && !st->started) {
            /* not established in time: our Terminate withdraws the Initiate (§6.2); the
             * stream is released once that is settled, or its linger passes */
            iwarp_llp_assoc_abort(a, i);
            stamp(a, st, now_ns);
        } else {
            st->expired = true; /* over for us now: released once the owner detaches it */
        }
        st->events |= IWARP_LLP_ASSOC_EV_TIMEDOUT;
        reported = true;
    }
    reap(a);
    return reported;
}

void iwarp_llp_assoc_lost(struct iwarp_llp_assoc *a, bool graceful)
{
    if (a->lost)
        return;
    a->lost = true;
    a->has_pend = false;
    for (uint16_t i = 0; i < a->hi; i++) {
        struct iwarp_llp_assoc_stream *st = &a->st[i];
        if (st->state == IWARP_LLP_ASSOC_FREE)
            continue;
        bool was_live = st->state == IWARP_LLP_ASSOC_SESSION;
        withdraw_request(st);
        iwarp_sess_ctl_lost(&st->ctl); /* §11.3: the sessions end with the association */
        (void)iwarp_sess_ctl_events(&st->ctl);
        engine_closed(a, st, graceful);
        struct iwarp_sess_chunk c;
        while (iwarp_sess_ssn_rx_drain(&st->ssn_rx, &c))
            give_back(a, c.ptr);
        if (was_live && !st->err)
            st->err = graceful ? 0 : IWARP_ERR_SCTP_ASSOC_LOST;
        if (st->state != IWARP_LLP_ASSOC_OVER) {
            st->state = IWARP_LLP_ASSOC_OVER;
            st->events |= IWARP_LLP_ASSOC_EV_CLOSED;
        }
    }
    a->reap = true;
    reap(a);
}
