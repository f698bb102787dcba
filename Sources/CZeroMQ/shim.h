#ifndef COHORT_CZEROMQ_SHIM_H
#define COHORT_CZEROMQ_SHIM_H

#include <zmq.h>
#include <errno.h>

/* ZMQ_ZAP_ENFORCE_DOMAIN is a DRAFT constant that libzmq 4.3.4 honours but
   does not declare in its public header. Without it, a missing ZAP handler
   lets every CURVE client in. */
#ifndef ZMQ_ZAP_ENFORCE_DOMAIN
#define ZMQ_ZAP_ENFORCE_DOMAIN 93
#endif

/* zmq.h spells some error numbers as (ZMQ_HAUSNUMERO + n) when the platform
   lacks them; functions give Swift one spelling whatever the platform. */
static inline int cohort_zmq_eterm(void) { return ETERM; }
static inline int cohort_zmq_ehostunreach(void) { return EHOSTUNREACH; }
static inline int cohort_zmq_enotsock(void) { return ENOTSOCK; }
static inline int cohort_zmq_emsgsize(void) { return EMSGSIZE; }
static inline int cohort_zmq_efsm(void) { return EFSM; }
static inline int cohort_zmq_eaddrinuse(void) { return EADDRINUSE; }
static inline int cohort_zmq_econnrefused(void) { return ECONNREFUSED; }

/* Waker: an eventfd on Linux (Glibc's module map leaves out sys/eventfd.h). */
#if defined(__linux__)
#include <sys/eventfd.h>
static inline int cohort_eventfd_nonblocking(void) {
    return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}
#endif

#endif
