/* libiwarp: definitions shared by every public header. */
#ifndef IWARP_COMMON_H
#define IWARP_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Public functions are exported; everything else is built with -fvisibility=hidden. */
#if defined(__GNUC__)
#define IWARP_EXTERN __attribute__((visibility("default")))
#else
#define IWARP_EXTERN
#endif

/* A byte count (>= 0) or a negative IWARP_ERR_* code. */
typedef ssize_t iwarp_ssize;

#ifdef __cplusplus
}
#endif
#endif
