/*
 * http.h - the HTTP front of `dsv4 serve` (libmicrohttpd, one thread per
 * connection): routing, authentication, body limits, and the glue from a
 * validated request to a srv_req and back to a response or an event stream.
 */
#ifndef DSV4_SERVER_HTTP_H
#define DSV4_SERVER_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "dsv4.h"
#include "server/metrics.h"
#include "server/scheduler.h"

typedef struct {
    const char *host;          /* address to bind ("127.0.0.1", "0.0.0.0", "::") */
    int port;                  /* 0: any free port */
    const char *api_key;       /* NULL: no authentication */
    size_t max_body;           /* bytes; larger bodies get 413 */
    int max_connections;
    double request_timeout;    /* seconds from arrival; 0 = none */
    unsigned idle_timeout;     /* seconds a connection may stay silent (no request, or a request's headers or body
                                  stalled); 0 = none. Not applied while a generation request is being answered */
    const char *allowed_origins; /* CORS: comma-separated origins allowed to call from a browser, "*" any; NULL or
                                    "": CORS off (no CORS headers, OPTIONS refused). Checked by srv_http_start */
} srv_http_opts;

typedef struct srv_http srv_http;

/* Starts listening at once; every generation route answers 503 until srv_http_ready. */
dsv4_status srv_http_start(const srv_http_opts *o, srv_metrics *m, srv_http **out, char *err, size_t errlen);
int srv_http_port(const srv_http *h);
/* The model is loaded: serve it. */
void srv_http_ready(srv_http *h, const char *model_name, const dsv4_tokenizer *tok, srv_sched *sched,
                    const dsv4_model_info *info);
/* Shutting down: new generation requests get 503; health says so. */
void srv_http_draining(srv_http *h);
/* Generation requests whose answers are still being written (streams included): the scheduler lets go of a
   request when its last token is out, a moment before the connection has sent the end of the answer. */
int srv_http_answering(srv_http *h);
/* Closes the listener and every connection (waits for their threads). */
void srv_http_stop(srv_http *h);

#endif
