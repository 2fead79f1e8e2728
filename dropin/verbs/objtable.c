/* SPDX-License-Identifier: BSD-2-Clause */
/* The wrappers of opaque libiwarp objects (CQs, SRQs), found again when an async event names
 * the libiwarp object. A short list under a lock: events are rare, and the post and poll
 * paths never look here. */
#define _GNU_SOURCE /* O_CLOEXEC, SOCK_CLOEXEC, strtok_r, ... in -std=c11 */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"

struct obj {
    const void *iwarp_obj;
    void *wrapper;
    struct obj *next;
};

static pthread_mutex_t objs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct obj *objs;

/**
 * iwd_obj_add - see internal.h.
 */
int iwd_obj_add(const void *iwarp_obj, void *wrapper)
{
    struct obj *o = malloc(sizeof *o);

    if (!o)
        return ENOMEM;
    o->iwarp_obj = iwarp_obj;
    o->wrapper = wrapper;
    pthread_mutex_lock(&objs_lock);
    o->next = objs;
    objs = o;
    pthread_mutex_unlock(&objs_lock);
    return 0;
}

/**
 * iwd_obj_del - see internal.h.
 */
void iwd_obj_del(const void *iwarp_obj)
{
    pthread_mutex_lock(&objs_lock);
    for (struct obj **p = &objs; *p; p = &(*p)->next)
        if ((*p)->iwarp_obj == iwarp_obj) {
            struct obj *o = *p;

            *p = o->next;
            free(o);
            break;
        }
    pthread_mutex_unlock(&objs_lock);
}

/**
 * iwd_obj_find - see internal.h. NULL when unknown.
 */
void *iwd_obj_find(const void *iwarp_obj)
{
    void *w = NULL;

    if (!iwarp_obj)
        return NULL;
    pthread_mutex_lock(&objs_lock);
    for (struct obj *o = objs; o; o = o->next)
        if (o->iwarp_obj == iwarp_obj) {
            w = o->wrapper;
            break;
        }
    pthread_mutex_unlock(&objs_lock);
    return w;
}
