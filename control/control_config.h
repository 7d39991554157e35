/*
 * control_config.h — what the background loops are configured with
 * (struct control_config): the database URLs, the Batch footprint and
 * budget, the admission and sync intervals, the BigQuery pull of the
 * billing export and the Cloud Logging reads. server/config.c fills it from
 * struct config (config_control) and server/main.c hands it to each loop's
 * start, so control/ reads no process configuration of its own. struct
 * config holds one (cfg->control) for all but the database URLs and gcp.
 */
#ifndef GPUGATE_CONTROL_CONFIG_H
#define GPUGATE_CONTROL_CONFIG_H

#include "gcp/gcp_config.h"

struct control_config {
  const char *database_url;        /* borrowed: the pooled connection */
  const char *direct_database_url; /* borrowed: a session connection for
                                      the loops, leader lock, notifications */
  struct gcp_config gcp;           /* Batch, BigQuery and Logging clients */

  char batch_backend[16]; /* "none" | "gcp" */
  long admission_interval_ms;
  long admission_reconcile_s;   /* full reconciliation period (0: every
                                   cycle) */
  long sync_interval_ms;        /* the Batch status sync */
  long capacity_window_grace_s; /* evict this long before a window ends */

  /* the Batch footprint and budget */
  char deployment[64];             /* gpugate-deployment label value */
  char batch_pubsub_topic[256];    /* "" = Batch publishes nothing */
  char batch_service_account[256]; /* "" = the project's default */
  long batch_mutations_per_s;      /* per region, whole deployment */
  long batch_mutations_burst;      /* tokens a region's bucket holds */

  /* the BigQuery pull of the billing export (billing_sync.h) */
  char billing_bq_table[512];   /* "project.dataset.table"; "" = no pull */
  char billing_bq_project[128]; /* runs the query jobs (default: table's) */
  char billing_bq_location[64]; /* "" = not given */
  char bigquery_endpoint[512];
  long billing_sync_interval_s; /* 0 = the leader does not pull */
  long billing_reread_days;
  long billing_max_bytes_billed; /* maximumBytesBilled; 0 = none */

  /* a job's logs from Cloud Logging (logpoll.h) */
  char logging_endpoint[512];
  long logging_reads_per_minute; /* entries:list, whole deployment */
  long logging_poll_ms;          /* the followers' poll interval */
  long logging_end_grace_ms;     /* a follow ends this long after its job */
};

#endif
