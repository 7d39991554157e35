/*
 * gcp_config.h — what the outbound Google clients are configured with
 * (struct gcp_config): filled by server/config.c from GPUGATE_* variables
 * and handed to gcp/ by its callers, so gcp/ reads no process
 * configuration of its own.
 */
#ifndef GPUGATE_GCP_CONFIG_H
#define GPUGATE_GCP_CONFIG_H

struct gcp_config {
  char batch_endpoint[512];
  char gcp_project[128];
  char gcp_token_source[16]; /* "metadata" | "key-file" | "none" */
  char gcp_key_file[512];
  char metadata_host[256];
};

#endif
