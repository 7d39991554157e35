/*
 * config.c — read GPUGATE_* environment variables into struct config.
 *
 * Every variable has a default documented in README.md. A bad value stops
 * start-up with one line naming the variable; nothing is guessed.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "server/config.h"
#include "lib/cursor.h"
#include "lib/file.h"
#include "lib/log.h"

#define SECRET_MAX ((size_t)64 * 1024)

static const char *env_or(const char *name, const char *dflt)
{
  const char *v = getenv(name);

  return v && *v ? v : dflt;
}

/* Copy src into dst[size]; -1 when it does not fit. */
static int copy_str(char *dst, size_t size, const char *src)
{
  size_t n = strlen(src);

  if (n >= size)
    return -1;
  memcpy(dst, src, n + 1);
  return 0;
}

static int env_long(const char *name, long dflt, long min, long max, long *out,
                    char *err, size_t errlen)
{
  const char *v = getenv(name);
  char *end;
  long n;

  if (!v || !*v) {
    *out = dflt;
    return 0;
  }
  errno = 0;
  n = strtol(v, &end, 10);
  if (errno || *end || n < min || n > max) {
    snprintf(err, errlen, "%s: expected an integer in [%ld, %ld], got \"%s\"",
             name, min, max, v);
    return -1;
  }
  *out = n;
  return 0;
}

static int env_bool(const char *name, bool dflt, bool *out, char *err,
                    size_t errlen)
{
  const char *v = getenv(name);

  if (!v || !*v)
    *out = dflt;
  else if (!strcmp(v, "true") || !strcmp(v, "1") || !strcmp(v, "yes"))
    *out = true;
  else if (!strcmp(v, "false") || !strcmp(v, "0") || !strcmp(v, "no"))
    *out = false;
  else {
    snprintf(err, errlen, "%s: expected true or false, got \"%s\"", name, v);
    return -1;
  }
  return 0;
}

static int env_choice(const char *name, const char *dflt,
                      const char *const *choices, char *dst, size_t size,
                      char *err, size_t errlen)
{
  const char *v = env_or(name, dflt);
  int i;

  for (i = 0; choices[i]; i++)
    if (!strcmp(v, choices[i]))
      return copy_str(dst, size, v);
  snprintf(err, errlen, "%s: unknown value \"%s\"", name, v);
  return -1;
}

static int env_str(const char *name, const char *dflt, char *dst, size_t size,
                   char *err, size_t errlen)
{
  if (copy_str(dst, size, env_or(name, dflt)) != 0) {
    snprintf(err, errlen, "%s: value too long (at most %zu bytes)", name,
             size - 1);
    return -1;
  }
  return 0;
}

/* Strip one trailing newline (secrets written with echo). */
static void chomp(char *s, size_t *len)
{
  while (*len > 0 && (s[*len - 1] == '\n' || s[*len - 1] == '\r'))
    s[--*len] = '\0';
}

/* A host:port variable (name) into host[hostsize] and *port; an unset
 * variable takes dflt. */
static int parse_hostport(const char *name, const char *dflt, char *host,
                          size_t hostsize, unsigned short *port_out, char *err,
                          size_t errlen)
{
  const char *v = env_or(name, dflt);
  const char *colon = strrchr(v, ':');
  char *end;
  long port;
  size_t hostlen;

  if (!colon || colon == v)
    goto bad;
  hostlen = (size_t)(colon - v);
  if (hostlen >= hostsize)
    goto bad;
  errno = 0;
  port = strtol(colon + 1, &end, 10);
  if (errno || *end || colon[1] == '\0' || port < 0 || port > 65535)
    goto bad;
  memcpy(host, v, hostlen);
  host[hostlen] = '\0';
  *port_out = (unsigned short)port;
  return 0;
bad:
  snprintf(err, errlen, "%s: expected host:port, got \"%s\"", name, v);
  return -1;
}

static int parse_listen(struct config *cfg, char *err, size_t errlen)
{
  return parse_hostport("GPUGATE_LISTEN", "127.0.0.1:8080", cfg->listen_host,
                        sizeof(cfg->listen_host), &cfg->listen_port, err,
                        errlen);
}

/* Connection caps and deadlines (SPEC §8 "Connections"), the upload limit
 * and the optional separate /metrics listener. */
static int parse_connections(struct config *cfg, char *err, size_t errlen)
{
  const char *m = getenv("GPUGATE_METRICS_LISTEN");

  if (env_long("GPUGATE_HTTP_MAX_CONNECTIONS", 0, 0, 1L << 24,
               &cfg->http_max_connections, err, errlen) ||
      env_long("GPUGATE_HTTP_MAX_CONNECTIONS_PER_CLIENT", 256, 0, 1L << 24,
               &cfg->http_max_connections_per_client, err, errlen) ||
      env_long("GPUGATE_HTTP_HEADER_TIMEOUT_S", 10, 1, 3600,
               &cfg->http_header_timeout_s, err, errlen) ||
      env_long("GPUGATE_HTTP_BODY_TIMEOUT_S", 30, 1, 3600,
               &cfg->http_body_timeout_s, err, errlen) ||
      env_long("GPUGATE_HTTP_UPLOAD_TIMEOUT_S", 600, 1, 86400,
               &cfg->http_upload_timeout_s, err, errlen) ||
      env_long("GPUGATE_HTTP_MAX_UPLOADS_PER_ROLE", 2, 1, 256,
               &cfg->http_max_uploads_per_role, err, errlen) ||
      env_long("GPUGATE_EVENTS_HEARTBEAT_MS", 15000, 10, 3600000,
               &cfg->events_heartbeat_ms, err, errlen) ||
      env_long("GPUGATE_EVENTS_POLL_MS", 500, 10, 60000, &cfg->events_poll_ms,
               err, errlen) ||
      env_long("GPUGATE_EVENTS_CLIENT_BUFFER", 262144, 1024, 1L << 30,
               &cfg->events_client_buffer, err, errlen))
    return -1;
  if (!m || !*m)
    return 0;
  return parse_hostport("GPUGATE_METRICS_LISTEN", "", cfg->metrics_listen_host,
                        sizeof(cfg->metrics_listen_host),
                        &cfg->metrics_listen_port, err, errlen);
}

/*
 * Clients behind a load balancer: the proxies whose forwarded header names
 * the client (GPUGATE_HTTP_TRUSTED_PROXIES, which header they write) and
 * the request rate per client address.
 */
static int parse_proxies(struct config *cfg, char *err, size_t errlen)
{
  const char *nets = getenv("GPUGATE_HTTP_TRUSTED_PROXIES");
  const char *hdr = env_or("GPUGATE_HTTP_FORWARDED_HEADER", "X-Forwarded-For");

  if (nets && *nets &&
      clientaddr_parse_nets("GPUGATE_HTTP_TRUSTED_PROXIES", nets,
                            cfg->trusted_proxies, CLIENTADDR_MAX_NETS,
                            &cfg->n_trusted_proxies, err, errlen) != 0)
    return -1;
  if (!strcasecmp(hdr, "X-Forwarded-For"))
    cfg->forwarded_header = CLIENTADDR_X_FORWARDED_FOR;
  else if (!strcasecmp(hdr, "Forwarded"))
    cfg->forwarded_header = CLIENTADDR_FORWARDED;
  else {
    snprintf(err, errlen,
             "GPUGATE_HTTP_FORWARDED_HEADER: expected X-Forwarded-For or "
             "Forwarded, got \"%.64s\"",
             hdr);
    return -1;
  }
  return env_long("GPUGATE_RATE_LIMIT_PER_CLIENT_RPS", 0, 0, 1000000,
                  &cfg->rate_limit_per_client_rps, err, errlen);
}

static int parse_algorithms(struct config *cfg, char *err, size_t errlen)
{
  const char *v = env_or("GPUGATE_JWT_ALGORITHMS", "HS256");
  const char *p = v;

  cfg->identity.jwt_algorithms = 0;
  while (*p) {
    size_t n = strcspn(p, ",");
    if (n == 5 && !strncmp(p, "HS256", 5))
      cfg->identity.jwt_algorithms |= CONFIG_ALG_HS256;
    else if (n == 5 && !strncmp(p, "RS256", 5))
      cfg->identity.jwt_algorithms |= CONFIG_ALG_RS256;
    else if (n == 5 && !strncmp(p, "ES256", 5))
      cfg->identity.jwt_algorithms |= CONFIG_ALG_ES256;
    else {
      snprintf(err, errlen,
               "GPUGATE_JWT_ALGORITHMS: unknown algorithm \"%.*s\" "
               "(allowed: HS256, RS256, ES256)",
               (int)(n > 32 ? 32 : n), p);
      return -1;
    }
    p += n;
    if (*p == ',')
      p++;
  }
  if (!cfg->identity.jwt_algorithms) {
    snprintf(err, errlen, "GPUGATE_JWT_ALGORITHMS: empty list");
    return -1;
  }
  return 0;
}

/* GPUGATE_JWT_PUBLIC_KEYS: comma-separated "kid=path.pem" or "path.pem". */
static int parse_pubkeys(struct config *cfg, char *err, size_t errlen)
{
  const char *v = getenv("GPUGATE_JWT_PUBLIC_KEYS");
  const char *p = v;

  if (!v || !*v)
    return 0;
  while (*p) {
    char item[640], *eq, *path;
    size_t n = strcspn(p, ",");
    struct config_pubkey *k;

    if (cfg->identity.n_pubkeys == CONFIG_MAX_KEYS || n == 0 ||
        n >= sizeof(item)) {
      snprintf(err, errlen,
               "GPUGATE_JWT_PUBLIC_KEYS: at most %d non-empty entries",
               CONFIG_MAX_KEYS);
      return -1;
    }
    memcpy(item, p, n);
    item[n] = '\0';
    k = &cfg->identity.pubkeys[cfg->identity.n_pubkeys];
    eq = strchr(item, '=');
    path = item;
    if (eq) {
      *eq = '\0';
      if (copy_str(k->kid, sizeof(k->kid), item) != 0 || !*k->kid) {
        snprintf(err, errlen, "GPUGATE_JWT_PUBLIC_KEYS: bad key id");
        return -1;
      }
      path = eq + 1;
    }
    k->pem = file_read(path, SECRET_MAX, &k->pem_len);
    if (!k->pem) {
      snprintf(err, errlen, "GPUGATE_JWT_PUBLIC_KEYS: cannot read \"%s\": %s",
               path, strerror(errno));
      return -1;
    }
    cfg->identity.n_pubkeys++;
    p += n;
    if (*p == ',')
      p++;
  }
  return 0;
}

static int parse_origins(struct config *cfg, char *err, size_t errlen)
{
  const char *v = getenv("GPUGATE_CORS_ORIGINS");
  const char *p = v;

  if (!v || !*v)
    return 0;
  while (*p) {
    size_t n = strcspn(p, ",");
    if (n > 0) {
      if (cfg->n_cors_origins == CONFIG_MAX_ORIGINS || n > 255) {
        snprintf(err, errlen,
                 "GPUGATE_CORS_ORIGINS: at most %d origins of 255 bytes",
                 CONFIG_MAX_ORIGINS);
        return -1;
      }
      cfg->cors_origins[cfg->n_cors_origins] = strndup(p, n);
      if (!cfg->cors_origins[cfg->n_cors_origins++]) {
        snprintf(err, errlen, "GPUGATE_CORS_ORIGINS: out of memory");
        return -1;
      }
    }
    p += n;
    if (*p == ',')
      p++;
  }
  return 0;
}

/*
 * The Batch footprint (SPEC §8): the deployment label every Batch job
 * carries, a GCP label value ([a-z0-9_-], at most 63), and the mutation
 * budget per region that all replicas of the deployment share. Batch
 * allows 6,000 mutations a minute per region: burst + 60.75 × rate must
 * stay within it (defaults: 30 + 60.75 × 98 = 5,983.5).
 */
static int footprint_config(struct config *cfg, char *err, size_t errlen)
{
  const char *p;

  if (env_str("GPUGATE_DEPLOYMENT", "default", cfg->control.deployment,
              sizeof(cfg->control.deployment), err, errlen))
    return -1;
  for (p = cfg->control.deployment; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' ||
          *p == '_'))
      break;
  if (!cfg->control.deployment[0] || *p ||
      strlen(cfg->control.deployment) > 63) {
    snprintf(err, errlen,
             "GPUGATE_DEPLOYMENT: expected 1 to 63 of [a-z0-9_-], got \"%s\"",
             cfg->control.deployment);
    return -1;
  }
  if (env_long("GPUGATE_BATCH_MUTATIONS_PER_S", 98, 1, 98,
               &cfg->control.batch_mutations_per_s, err, errlen) ||
      env_long("GPUGATE_BATCH_MUTATIONS_BURST", 30, 1, 6000,
               &cfg->control.batch_mutations_burst, err, errlen))
    return -1;
  /* a leased token lives 0.25 s (control/budget.h) and a call may take up
   * to 0.5 s more to reach Batch: the mutations Batch counts in any minute
   * were granted within 60.75 s */
  if (4 * cfg->control.batch_mutations_burst +
          243 * cfg->control.batch_mutations_per_s >
      24000) {
    snprintf(err, errlen,
             "GPUGATE_BATCH_MUTATIONS_BURST: %ld + 60.75 s x %ld a second "
             "exceeds Batch's 6,000 mutations a minute per region",
             cfg->control.batch_mutations_burst,
             cfg->control.batch_mutations_per_s);
    return -1;
  }
  return 0;
}

/*
 * Pub/Sub push with Google's OIDC authentication: the audience and the
 * service account go together; the JWKS URL has Google's default.
 */
static int load_pubsub_oidc(struct config *cfg, char *err, size_t errlen)
{
  if (env_str("GPUGATE_PUBSUB_JWKS_URL",
              "https://www.googleapis.com/oauth2/v3/certs",
              cfg->pubsub_jwks_url, sizeof(cfg->pubsub_jwks_url), err,
              errlen) ||
      env_str("GPUGATE_PUBSUB_AUDIENCE", "", cfg->pubsub_audience,
              sizeof(cfg->pubsub_audience), err, errlen) ||
      env_str("GPUGATE_PUBSUB_SERVICE_ACCOUNT", "", cfg->pubsub_service_account,
              sizeof(cfg->pubsub_service_account), err, errlen))
    return -1;
  if (strncmp(cfg->pubsub_jwks_url, "https://", 8) != 0 &&
      strncmp(cfg->pubsub_jwks_url, "http://", 7) != 0) {
    snprintf(err, errlen,
             "GPUGATE_PUBSUB_JWKS_URL: expected an http(s) URL, got \"%s\"",
             cfg->pubsub_jwks_url);
    return -1;
  }
  if (*cfg->pubsub_audience && !*cfg->pubsub_service_account) {
    snprintf(err, errlen,
             "GPUGATE_PUBSUB_SERVICE_ACCOUNT: required with "
             "GPUGATE_PUBSUB_AUDIENCE");
    return -1;
  }
  if (*cfg->pubsub_service_account && !*cfg->pubsub_audience) {
    snprintf(err, errlen,
             "GPUGATE_PUBSUB_AUDIENCE: required with "
             "GPUGATE_PUBSUB_SERVICE_ACCOUNT");
    return -1;
  }
  if (*cfg->pubsub_service_account &&
      !strchr(cfg->pubsub_service_account, '@')) {
    snprintf(err, errlen,
             "GPUGATE_PUBSUB_SERVICE_ACCOUNT: expected an email, got \"%s\"",
             cfg->pubsub_service_account);
    return -1;
  }
  return 0;
}

/*
 * The key of list cursors: from GPUGATE_CURSOR_KEY_FILE, else derived from
 * the HS256 JWT secret (both with a domain separator, so replicas sharing
 * the secret agree), else random for this process (cursors then do not
 * survive a restart or cross replicas).
 */
static int load_cursor_key(struct config *cfg, char *err, size_t errlen)
{
  const char *path = getenv("GPUGATE_CURSOR_KEY_FILE");
  int rc = -1;

  if (path && *path) {
    size_t len = 0;
    char *s = file_read(path, SECRET_MAX, &len);
    if (!s) {
      snprintf(err, errlen, "GPUGATE_CURSOR_KEY_FILE: cannot read \"%s\": %s",
               path, strerror(errno));
      return -1;
    }
    chomp(s, &len);
    if (len >= 32)
      rc = cursor_derive_key((unsigned char *)s, len, cfg->cursor_key);
    OPENSSL_cleanse(s, len);
    free(s);
    if (rc != 0) {
      snprintf(err, errlen,
               "GPUGATE_CURSOR_KEY_FILE: \"%s\" must hold at least 32 bytes",
               path);
      return -1;
    }
    snprintf(cfg->cursor_key_source, sizeof(cfg->cursor_key_source), "file");
  } else if (cfg->identity.hs256_secret &&
             cursor_derive_key(cfg->identity.hs256_secret,
                               cfg->identity.hs256_secret_len,
                               cfg->cursor_key) == 0) {
    snprintf(cfg->cursor_key_source, sizeof(cfg->cursor_key_source),
             "jwt-secret");
  } else if (RAND_bytes(cfg->cursor_key, (int)sizeof(cfg->cursor_key)) == 1) {
    snprintf(cfg->cursor_key_source, sizeof(cfg->cursor_key_source), "random");
  } else {
    snprintf(err, errlen, "GPUGATE_CURSOR_KEY_FILE: no random bytes");
    return -1;
  }
  cfg->cursor_key_set = true;
  return 0;
}

/* The BigQuery pull: the table is project.dataset.table of letters,
 * digits, '-', '_' (and ':' or '.' in a domain-scoped project), quoted
 * with backticks in SQL, so nothing else may pass. */
static int load_billing_pull(struct config *cfg, char *err, size_t errlen)
{
  const char *t = cfg->control.billing_bq_table, *p;
  int dots = 0;

  if (env_str("GPUGATE_BILLING_BIGQUERY_TABLE", "",
              cfg->control.billing_bq_table,
              sizeof(cfg->control.billing_bq_table), err, errlen) ||
      env_str("GPUGATE_BILLING_BIGQUERY_PROJECT", "",
              cfg->control.billing_bq_project,
              sizeof(cfg->control.billing_bq_project), err, errlen) ||
      env_str("GPUGATE_BILLING_BIGQUERY_LOCATION", "",
              cfg->control.billing_bq_location,
              sizeof(cfg->control.billing_bq_location), err, errlen) ||
      env_str("GPUGATE_BIGQUERY_ENDPOINT", "https://bigquery.googleapis.com",
              cfg->control.bigquery_endpoint,
              sizeof(cfg->control.bigquery_endpoint), err, errlen) ||
      env_long("GPUGATE_BILLING_SYNC_INTERVAL_S", 21600, 0, 31L * 86400,
               &cfg->control.billing_sync_interval_s, err, errlen) ||
      env_long("GPUGATE_BILLING_REREAD_DAYS", 10, 0, 366,
               &cfg->control.billing_reread_days, err, errlen) ||
      env_long("GPUGATE_BILLING_MAX_BYTES_BILLED", 10L << 30, 0, LONG_MAX,
               &cfg->control.billing_max_bytes_billed, err, errlen) ||
      env_str("GPUGATE_LOGGING_ENDPOINT", "https://logging.googleapis.com",
              cfg->control.logging_endpoint,
              sizeof(cfg->control.logging_endpoint), err, errlen) ||
      env_long("GPUGATE_LOGGING_READS_PER_MINUTE", 50, 1, 60000,
               &cfg->control.logging_reads_per_minute, err, errlen) ||
      env_long("GPUGATE_LOGGING_POLL_MS", 5000, 100, 600000,
               &cfg->control.logging_poll_ms, err, errlen) ||
      env_long("GPUGATE_LOGGING_END_GRACE_MS", 10000, 0, 600000,
               &cfg->control.logging_end_grace_ms, err, errlen))
    return -1;
  for (p = t; *p; p++) {
    if (*p == '.')
      dots++;
    else if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') &&
             !(*p >= '0' && *p <= '9') && *p != '-' && *p != '_' && *p != ':')
      break;
  }
  if (*t && (*p || dots < 2 || *t == '.' || p[-1] == '.' ||
             strstr(t, "..") != NULL)) {
    snprintf(err, errlen,
             "GPUGATE_BILLING_BIGQUERY_TABLE: expected project.dataset.table, "
             "got \"%.200s\"",
             t);
    return -1;
  }
  if (*t && !*cfg->control.billing_bq_project) {
    /* the table's project: everything before the last two dots */
    const char *last = strrchr(t, '.'), *q = last - 1;
    while (q > t && *q != '.')
      q--;
    snprintf(cfg->control.billing_bq_project,
             sizeof(cfg->control.billing_bq_project), "%.*s", (int)(q - t), t);
  }
  for (p = cfg->control.billing_bq_project; *p; p++)
    if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') &&
        !(*p >= '0' && *p <= '9') && *p != '-' && *p != '_' && *p != ':' &&
        *p != '.') {
      snprintf(err, errlen,
               "GPUGATE_BILLING_BIGQUERY_PROJECT: not a project ID: "
               "\"%.128s\"",
               cfg->control.billing_bq_project);
      return -1;
    }
  return 0;
}

int config_load(struct config *cfg, char *err, size_t errlen)
{
  static const char *const backends[] = {"none", "gcp", NULL};
  static const char *const sources[] = {"metadata", "key-file", "none", NULL};
  const char *path;
  long n;
  int level;

  memset(cfg, 0, sizeof(*cfg));
  if (parse_listen(cfg, err, errlen))
    return -1;
  cfg->database_url =
      strdup(env_or("GPUGATE_DATABASE_URL", "postgresql:///gpugate"));
  if (!cfg->database_url)
    return -1;
  /* the leader lock and LISTEN need a session of their own: behind
   * PgBouncer in transaction mode, point this at PostgreSQL directly */
  cfg->direct_database_url =
      strdup(env_or("GPUGATE_DIRECT_DATABASE_URL", cfg->database_url));
  if (!cfg->direct_database_url)
    return -1;
  if (env_bool("GPUGATE_MIGRATE_ON_START", true, &cfg->migrate_on_start, err,
               errlen))
    return -1;

  if (parse_algorithms(cfg, err, errlen))
    return -1;
  path = getenv("GPUGATE_JWT_HS256_SECRET_FILE");
  if (path && *path) {
    char *s = file_read(path, SECRET_MAX, &cfg->identity.hs256_secret_len);
    if (!s) {
      snprintf(err, errlen,
               "GPUGATE_JWT_HS256_SECRET_FILE: cannot read \"%s\": %s", path,
               strerror(errno));
      return -1;
    }
    chomp(s, &cfg->identity.hs256_secret_len);
    cfg->identity.hs256_secret = (unsigned char *)s;
  }
  if (parse_pubkeys(cfg, err, errlen))
    return -1;
  if (env_str("GPUGATE_JWT_ISSUER", "gpugate", cfg->identity.jwt_issuer,
              sizeof(cfg->identity.jwt_issuer), err, errlen) ||
      env_str("GPUGATE_JWT_AUDIENCE", "gpugate", cfg->identity.jwt_audience,
              sizeof(cfg->identity.jwt_audience), err, errlen))
    return -1;
  if (env_long("GPUGATE_JWT_LEEWAY_S", 60, 0, 3600, &cfg->identity.jwt_leeway_s,
               err, errlen) ||
      env_long("GPUGATE_JWT_MAX_LIFETIME_S", 86400, 60, 31L * 86400,
               &cfg->identity.jwt_max_lifetime_s, err, errlen))
    return -1;

  if (env_choice("GPUGATE_BATCH_BACKEND", "none", backends,
                 cfg->control.batch_backend, sizeof(cfg->control.batch_backend),
                 err, errlen) ||
      env_str("GPUGATE_BATCH_ENDPOINT", "https://batch.googleapis.com",
              cfg->gcp.batch_endpoint, sizeof(cfg->gcp.batch_endpoint), err,
              errlen) ||
      env_str("GPUGATE_GCP_PROJECT", "", cfg->gcp.gcp_project,
              sizeof(cfg->gcp.gcp_project), err, errlen) ||
      env_choice("GPUGATE_GCP_TOKEN_SOURCE", "metadata", sources,
                 cfg->gcp.gcp_token_source, sizeof(cfg->gcp.gcp_token_source),
                 err, errlen) ||
      env_str("GPUGATE_GCP_KEY_FILE", "", cfg->gcp.gcp_key_file,
              sizeof(cfg->gcp.gcp_key_file), err, errlen) ||
      env_str("GCE_METADATA_HOST", "metadata.google.internal",
              cfg->gcp.metadata_host, sizeof(cfg->gcp.metadata_host), err,
              errlen))
    return -1;
  if (env_str("GPUGATE_BATCH_PUBSUB_TOPIC", "", cfg->control.batch_pubsub_topic,
              sizeof(cfg->control.batch_pubsub_topic), err, errlen) ||
      env_str("GPUGATE_BATCH_SERVICE_ACCOUNT", "",
              cfg->control.batch_service_account,
              sizeof(cfg->control.batch_service_account), err, errlen))
    return -1;
  if (*cfg->control.batch_pubsub_topic &&
      strncmp(cfg->control.batch_pubsub_topic, "projects/", 9) != 0) {
    snprintf(err, errlen,
             "GPUGATE_BATCH_PUBSUB_TOPIC: expected projects/PROJECT/topics/"
             "TOPIC, got \"%s\"",
             cfg->control.batch_pubsub_topic);
    return -1;
  }
  if (!strcmp(cfg->control.batch_backend, "gcp") && !*cfg->gcp.gcp_project) {
    snprintf(err, errlen,
             "GPUGATE_GCP_PROJECT: required when GPUGATE_BATCH_BACKEND=gcp");
    return -1;
  }
  path = getenv("GPUGATE_PUBSUB_PUSH_SECRET_FILE");
  if (path && *path) {
    size_t len;
    cfg->pubsub_push_secret = file_read(path, SECRET_MAX, &len);
    if (!cfg->pubsub_push_secret) {
      snprintf(err, errlen,
               "GPUGATE_PUBSUB_PUSH_SECRET_FILE: cannot read \"%s\": %s", path,
               strerror(errno));
      return -1;
    }
    chomp(cfg->pubsub_push_secret, &len);
  }

  if (load_pubsub_oidc(cfg, err, errlen))
    return -1;

  if (env_long("GPUGATE_ADMISSION_INTERVAL_MS", 1000, 10, 3600000,
               &cfg->control.admission_interval_ms, err, errlen) ||
      env_long("GPUGATE_SYNC_INTERVAL_MS", 10000, 100, 3600000,
               &cfg->control.sync_interval_ms, err, errlen))
    return -1;
  if (env_long("GPUGATE_ADMISSION_RECONCILE_S", 60, 0, 86400,
               &cfg->control.admission_reconcile_s, err, errlen))
    return -1;
  /* at most the longest capacity window (DWS Calendar: 90 days) */
  if (env_long("GPUGATE_CAPACITY_WINDOW_GRACE_S", 600, 0, 7776000,
               &cfg->control.capacity_window_grace_s, err, errlen))
    return -1;
  if (parse_origins(cfg, err, errlen))
    return -1;
  if (env_long("GPUGATE_RATE_LIMIT_RPS", 200, 0, 1000000, &cfg->rate_limit_rps,
               err, errlen))
    return -1;
  level = log_level_parse(env_or("GPUGATE_LOG_LEVEL", "info"));
  if (level < 0) {
    snprintf(err, errlen,
             "GPUGATE_LOG_LEVEL: expected debug, info, warn or error");
    return -1;
  }
  cfg->log_level = level;

  if (env_long("GPUGATE_HTTP_THREADS", 8, 1, 256, &n, err, errlen))
    return -1;
  cfg->http_threads = (int)n;
  if (env_long("GPUGATE_DB_POOL_SIZE", n, 1, 256, &n, err, errlen))
    return -1;
  cfg->db_pool_size = (int)n;
  if (env_long("GPUGATE_HTTP_TIMEOUT_S", 30, 1, 3600, &cfg->http_timeout_s, err,
               errlen))
    return -1;
  if (env_str("GPUGATE_PORT_FILE", "", cfg->port_file, sizeof(cfg->port_file),
              err, errlen))
    return -1;
  if (parse_connections(cfg, err, errlen) || parse_proxies(cfg, err, errlen))
    return -1;
  if (load_cursor_key(cfg, err, errlen))
    return -1;
  if (config_oidc_load(&cfg->identity.oidc, cfg->identity.jwt_issuer, err,
                       errlen))
    return -1;
  if (load_billing_pull(cfg, err, errlen))
    return -1;
  return footprint_config(cfg, err, errlen);
}

void config_control(const struct config *cfg, struct control_config *out)
{
  *out = cfg->control;
  out->database_url = cfg->database_url;
  out->direct_database_url = cfg->direct_database_url;
  out->gcp = cfg->gcp;
}

void config_free(struct config *cfg)
{
  int i;

  free(cfg->database_url);
  free(cfg->direct_database_url);
  OPENSSL_cleanse(cfg->cursor_key, sizeof(cfg->cursor_key));
  if (cfg->identity.hs256_secret) {
    memset(cfg->identity.hs256_secret, 0, cfg->identity.hs256_secret_len);
    free(cfg->identity.hs256_secret);
  }
  for (i = 0; i < cfg->identity.n_pubkeys; i++)
    free(cfg->identity.pubkeys[i].pem);
  free(cfg->pubsub_push_secret);
  for (i = 0; i < cfg->n_cors_origins; i++)
    free(cfg->cors_origins[i]);
  memset(cfg, 0, sizeof(*cfg));
}
