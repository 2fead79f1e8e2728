/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Two libiwarp peers over loopback TCP (stack_pair.h), shared by test_stack_tcp_errors and
 * test_diag: a context each (progress threads), a 64 KiB MR each, one connected QP pair that
 * has exchanged its first Send, the server's MR advertised to the client.
 *
 * Everything is static inline: each test file is its own executable.
 */
#ifndef IWARP_TESTS_DUO_H
#define IWARP_TESTS_DUO_H

#include "stack_pair.h"

struct duo {
    struct sp_side srv, cli;
    struct sp_pair p;
    uint8_t *sbuf, *cbuf;
    struct iwarp_mr *smr, *cmr;
};

/* Sets d up: both sides, their buffers and MRs, the pair connected (16 WRs each way, every
 * send signalled, 8 reads in flight each way) and its first Send exchanged. */
static inline void duo_up(struct duo *d)
{
    memset(d, 0, sizeof *d);
    sp_side_init(&d->srv, IWARP_PROGRESS_THREAD, 64);
    sp_side_init(&d->cli, IWARP_PROGRESS_THREAD, 64);
    d->sbuf = calloc(1, 65536);
    d->cbuf = calloc(1, 65536);
    d->smr = sp_reg(&d->srv, d->sbuf, 65536, 0);
    d->cmr = sp_reg(&d->cli, d->cbuf, 65536, 0);
    d->p.srv.mine = (struct sp_advert){.rkey = d->smr->rkey, .addr = (uintptr_t)d->sbuf};
    struct sp_cfg cfg = {.cap = {.max_send_wr = 16, .max_recv_wr = 16},
                         .sq_sig_all = 1,
                         .param = {.responder_resources = 8, .initiator_depth = 8}};
    sp_connect_pairs(&d->srv, &d->cli, &d->p, 1, &cfg);
    sp_first_send(&d->srv, &d->cli, &d->p, 1);
}

/* Releases what duo_up set up: the pair, the MRs, both sides, the buffers. */
static inline void duo_free(struct duo *d)
{
    sp_destroy_pairs(&d->p, 1);
    ASSERT_EQ(iwarp_dereg_mr(d->smr), 0);
    ASSERT_EQ(iwarp_dereg_mr(d->cmr), 0);
    sp_side_fini(&d->cli);
    sp_side_fini(&d->srv);
    free(d->sbuf);
    free(d->cbuf);
}

#endif
