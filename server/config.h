/*
 * config.h — gpugate's configuration, read once from GPUGATE_* environment
 * variables (SPEC §6). Secrets come from files named by variables, never
 * from the variables themselves.
 */
#ifndef GPUGATE_CONFIG_H
#define GPUGATE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "control/control_config.h"
#include "server/clientaddr.h"
#include "gcp/gcp_config.h"
#include "lib/file.h"
#include "identity/identity_config.h"

#define CONFIG_MAX_ORIGINS 16

struct config {
  char listen_host[64];
  unsigned short listen_port; /* 0 = any free port */
  char *database_url;         /* owned */
  bool migrate_on_start;

  struct identity_config identity; /* gpugate's own tokens, the provider */
  /* the background loops' settings: the Batch backend and footprint,
   * intervals, the BigQuery pull, Cloud Logging (its database URLs and gcp
   * are left empty here: config_control() fills them from this struct's) */
  struct control_config control;

  struct gcp_config gcp;        /* Batch endpoint, project, token source */
  char *pubsub_push_secret;     /* owned; NULL when not configured */
  unsigned char cursor_key[32]; /* list cursors (lib/cursor.h) */
  bool cursor_key_set;
  char cursor_key_source[16];       /* "file", "jwt-secret" or "random" */
  char pubsub_jwks_url[512];        /* Google's OIDC signing keys */
  char pubsub_audience[512];        /* "" = OIDC push not configured */
  char pubsub_service_account[256]; /* required email of push tokens */
  char *direct_database_url;        /* owned: session connection for the
                                       loops, leader lock and migrations */

  char *cors_origins[CONFIG_MAX_ORIGINS]; /* owned */
  int n_cors_origins;
  long rate_limit_rps;
  int log_level; /* enum log_level */

  int http_threads;    /* libmicrohttpd worker threads */
  int db_pool_size;    /* PostgreSQL connections */
  long http_timeout_s; /* idle connection timeout */
  char port_file[512]; /* write the bound port here ("" = no) */

  /* connection hygiene (server/connlimit.c) and the metrics listener */
  long http_max_connections;            /* 0 = from the fd limit */
  long http_max_connections_per_client; /* 0 = no per-client cap */
  long http_header_timeout_s;     /* connection (or last reply) to headers */
  long http_body_timeout_s;       /* headers to the whole body */
  long http_upload_timeout_s;     /* the same for streamed uploads (billing) */
  long http_max_uploads_per_role; /* concurrent streamed uploads per role */
  /* the live event stream (server/events_hub.c) */
  long events_heartbeat_ms;     /* a comment line this often */
  long events_poll_ms;          /* read without a notice this often */
  long events_client_buffer;    /* bytes a client may fall behind */
  char metrics_listen_host[64]; /* "" = /metrics on GPUGATE_LISTEN */
  unsigned short metrics_listen_port;

  /* clients behind a load balancer (server/clientaddr.h) */
  struct clientaddr_net trusted_proxies[CLIENTADDR_MAX_NETS];
  int n_trusted_proxies;          /* 0: every peer is its own client */
  int forwarded_header;           /* enum clientaddr_header */
  long rate_limit_per_client_rps; /* per client address; 0 = off */
};

/*
 * Fill *cfg from the environment. On a bad value returns -1 and writes a
 * one-line message naming the variable into err. The caller owns *cfg and
 * frees it with config_free() whatever the result.
 */
int config_load(struct config *cfg, char *err, size_t errlen);

/*
 * Fill *out with what the background loops of control/ need from cfg (see
 * control/control_config.h). The URLs are borrowed: cfg must outlive out.
 */
void config_control(const struct config *cfg, struct control_config *out);

/* Free what config_load() allocated. Accepts a zeroed struct. */
void config_free(struct config *cfg);

#endif
