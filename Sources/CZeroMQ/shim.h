#ifndef COHORT_CZEROMQ_SHIM_H
#define COHORT_CZEROMQ_SHIM_H

#include <zmq.h>

/* ZMQ_ZAP_ENFORCE_DOMAIN is a DRAFT constant that libzmq 4.3.4 honours but
   does not declare in its public header. Without it, a missing ZAP handler
   lets every CURVE client in. */
#ifndef ZMQ_ZAP_ENFORCE_DOMAIN
#define ZMQ_ZAP_ENFORCE_DOMAIN 93
#endif

#endif
