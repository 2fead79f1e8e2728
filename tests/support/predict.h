/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The QP engine's header prediction (core_qp_rx.c, core_qp_tx.c) is on in every QP; a unit test
 * of the engine runs a second time as its ".general" twin (tests/CMakeLists.txt), with
 * IWARP_TEST_GENERAL_PATH set, where general_path() turns it off: the same hand-written
 * expectations then hold for the general paths, segment for segment.
 */
#ifndef IWARP_TEST_PREDICT_H
#define IWARP_TEST_PREDICT_H

#include <stdbool.h>
#include <stdlib.h>

#include "core/core_qp.h"

/* Whether this run takes the general paths only. */
static inline bool general_run(void)
{
    return getenv("IWARP_TEST_GENERAL_PATH") != NULL;
}

/* After iwarp_core_qp_init: prediction off in the ".general" run. */
static inline void general_path(struct iwarp_core_qp *qp)
{
    if (general_run())
        qp->rx_predict = qp->tx_predict = false;
}

#endif
