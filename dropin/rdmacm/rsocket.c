/* SPDX-License-Identifier: BSD-2-Clause */
/* rsockets (rdma/rsocket.h): not provided. Every call fails with ENOSYS, and the first one
 * says so once on stderr, so that a program (rstream, riostream) tells why it stopped. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <stdatomic.h>

#include <rdma/rsocket.h>

#include "cma.h"

/* One log line per process, then ENOSYS. */
static int nosys(const char *fn)
{
    static atomic_flag said = ATOMIC_FLAG_INIT;
    if (!atomic_flag_test_and_set(&said))
        iwd_log(IWARP_LOG_ERROR, "%s: rsockets are not supported by libiwarp's librdmacm (ENOSYS)",
                fn);
    errno = ENOSYS;
    return -1;
}

/** rsocket - ENOSYS (rsockets are not provided). */
IWD_EXPORT int rsocket(int domain, int type, int protocol)
{
    (void)domain, (void)type, (void)protocol;
    return nosys(__func__);
}

/** rbind - ENOSYS. */
IWD_EXPORT int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
    (void)socket, (void)addr, (void)addrlen;
    return nosys(__func__);
}

/** rlisten - ENOSYS. */
IWD_EXPORT int rlisten(int socket, int backlog)
{
    (void)socket, (void)backlog;
    return nosys(__func__);
}

/** raccept - ENOSYS. */
IWD_EXPORT int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
    (void)socket, (void)addr, (void)addrlen;
    return nosys(__func__);
}

/** rconnect - ENOSYS. */
IWD_EXPORT int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
    (void)socket, (void)addr, (void)addrlen;
    return nosys(__func__);
}

/** rshutdown - ENOSYS. */
IWD_EXPORT int rshutdown(int socket, int how)
{
    (void)socket, (void)how;
    return nosys(__func__);
}

/** rclose - ENOSYS. */
IWD_EXPORT int rclose(int socket)
{
    (void)socket;
    return nosys(__func__);
}

/** rrecv - ENOSYS. */
IWD_EXPORT ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
    (void)socket, (void)buf, (void)len, (void)flags;
    return nosys(__func__);
}

/** rrecvfrom - ENOSYS. */
IWD_EXPORT ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
                             struct sockaddr *src_addr, socklen_t *addrlen)
{
    (void)socket, (void)buf, (void)len, (void)flags, (void)src_addr, (void)addrlen;
    return nosys(__func__);
}

/** rrecvmsg - ENOSYS. */
IWD_EXPORT ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
    (void)socket, (void)msg, (void)flags;
    return nosys(__func__);
}

/** rsend - ENOSYS. */
IWD_EXPORT ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
    (void)socket, (void)buf, (void)len, (void)flags;
    return nosys(__func__);
}

/** rsendto - ENOSYS. */
IWD_EXPORT ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
                           const struct sockaddr *dest_addr, socklen_t addrlen)
{
    (void)socket, (void)buf, (void)len, (void)flags, (void)dest_addr, (void)addrlen;
    return nosys(__func__);
}

/** rsendmsg - ENOSYS. */
IWD_EXPORT ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
    (void)socket, (void)msg, (void)flags;
    return nosys(__func__);
}

/** rread - ENOSYS. */
IWD_EXPORT ssize_t rread(int socket, void *buf, size_t count)
{
    (void)socket, (void)buf, (void)count;
    return nosys(__func__);
}

/** rreadv - ENOSYS. */
IWD_EXPORT ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
    (void)socket, (void)iov, (void)iovcnt;
    return nosys(__func__);
}

/** rwrite - ENOSYS. */
IWD_EXPORT ssize_t rwrite(int socket, const void *buf, size_t count)
{
    (void)socket, (void)buf, (void)count;
    return nosys(__func__);
}

/** rwritev - ENOSYS. */
IWD_EXPORT ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
    (void)socket, (void)iov, (void)iovcnt;
    return nosys(__func__);
}

/** rpoll - ENOSYS. */
IWD_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
    (void)fds, (void)nfds, (void)timeout;
    return nosys(__func__);
}

/** rselect - ENOSYS. */
IWD_EXPORT int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
                       struct timeval *timeout)
{
    (void)nfds, (void)readfds, (void)writefds, (void)exceptfds, (void)timeout;
    return nosys(__func__);
}

/** rgetpeername - ENOSYS. */
IWD_EXPORT int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
    (void)socket, (void)addr, (void)addrlen;
    return nosys(__func__);
}

/** rgetsockname - ENOSYS. */
IWD_EXPORT int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
    (void)socket, (void)addr, (void)addrlen;
    return nosys(__func__);
}

/** rsetsockopt - ENOSYS. */
IWD_EXPORT int rsetsockopt(int socket, int level, int optname, const void *optval, socklen_t optlen)
{
    (void)socket, (void)level, (void)optname, (void)optval, (void)optlen;
    return nosys(__func__);
}

/** rgetsockopt - ENOSYS. */
IWD_EXPORT int rgetsockopt(int socket, int level, int optname, void *optval, socklen_t *optlen)
{
    (void)socket, (void)level, (void)optname, (void)optval, (void)optlen;
    return nosys(__func__);
}

/** rfcntl - ENOSYS. */
IWD_EXPORT int rfcntl(int socket, int cmd, ...)
{
    (void)socket, (void)cmd;
    return nosys(__func__);
}

/** riomap - ENOSYS (returns -1). */
IWD_EXPORT off_t riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset)
{
    (void)socket, (void)buf, (void)len, (void)prot, (void)flags, (void)offset;
    return nosys(__func__);
}

/** riounmap - ENOSYS. */
IWD_EXPORT int riounmap(int socket, void *buf, size_t len)
{
    (void)socket, (void)buf, (void)len;
    return nosys(__func__);
}

/** riowrite - ENOSYS (returns (size_t)-1). */
IWD_EXPORT size_t riowrite(int socket, const void *buf, size_t count, off_t offset, int flags)
{
    (void)socket, (void)buf, (void)count, (void)offset, (void)flags;
    return (size_t)nosys(__func__);
}
