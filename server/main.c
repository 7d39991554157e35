/*
 * main.c — the gpugate binary and its subcommands:
 *
 *   gpugate [serve]            serve the API
 *   gpugate migrate            apply database migrations
 *   gpugate apply FILE         load administrator objects from a JSON file
 *   gpugate token [--team T] --role R [--ttl S] [--alg A --key F --kid K]
 *   gpugate version
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gcp/auth.h"
#include "gcp/bigquery.h"
#include "db/db.h"
#include "billing/billing_ingest.h"
#include "control/billing_rekey.h"
#include "control/billing_sync.h"
#include "identity/auth.h"
#include "server/config.h"
#include "control/configwatch.h"
#include "server/events_hub.h"
#include "control/dispatch.h"
#include "server/http.h"
#include "lib/log.h"
#include "control/logpoll.h"
#include "control/loop.h"
#include "server/problem.h"
#include "server/router.h"
#include "control/waker.h"

#ifndef GPUGATE_VERSION
#define GPUGATE_VERSION "0.1.0"
#endif

static int usage(void)
{
  fprintf(stderr,
          "usage: gpugate [serve]\n"
          "       gpugate migrate\n"
          "       gpugate apply FILE\n"
          "       gpugate token [--team TEAM] --role "
          "member|admin|finance|metrics [--ttl SECONDS]\n"
          "                     (--team is required for member)\n"
          "                     [--alg HS256|RS256|ES256 --key PEM --kid ID]\n"
          "       gpugate ingest-billing FILE|-\n"
          "       gpugate billing-sync\n"
          "       gpugate version\n");
  return 2;
}

static int load_config(struct config *cfg)
{
  char err[512];

  if (config_load(cfg, err, sizeof(err)) != 0) {
    fprintf(stderr, "gpugate: %s\n", err);
    return -1;
  }
  log_set_level(cfg->log_level);
  return 0;
}

/* Migrate over a fresh connection, waiting up to wait_s for the server. */
static int migrate(const struct config *cfg, int wait_s)
{
  char err[512] = "";
  PGconn *pg = NULL;
  int i, rc;

  for (i = 0; i <= wait_s; i++) {
    pg = db_connect(cfg->direct_database_url, err, sizeof(err));
    if (pg)
      break;
    if (i < wait_s)
      sleep(1);
  }
  if (!pg) {
    fprintf(stderr, "gpugate: GPUGATE_DATABASE_URL: cannot connect: %s\n", err);
    return -1;
  }
  rc = db_migrate(pg, err, sizeof(err));
  if (rc == 0) /* rows stored before a row's key was its meaning */
    rc = billing_rekey(pg, err, sizeof(err));
  PQfinish(pg);
  if (rc != 0)
    fprintf(stderr, "gpugate: migration failed: %s\n", err);
  return rc;
}

static int cmd_migrate(void)
{
  struct config cfg;
  int rc = 1;

  if (load_config(&cfg) == 0 && migrate(&cfg, 0) == 0) {
    printf("migrations applied: %d\n", db_migrations_expected());
    rc = 0;
  }
  config_free(&cfg);
  return rc;
}

static int write_port_file(const char *path, unsigned short port)
{
  char tmp[600];
  FILE *f;

  snprintf(tmp, sizeof(tmp), "%s.tmp", path);
  f = fopen(tmp, "w");
  if (!f)
    return -1;
  fprintf(f, "%u\n", port);
  if (fclose(f) != 0)
    return -1;
  return rename(tmp, path);
}

static int cmd_serve(void)
{
  struct config cfg;
  struct auth_ctx *auth = NULL;
  struct db_pool *pool = NULL;
  struct http_server *http = NULL;
  struct loop *loop = NULL;
  struct dispatch *dispatch = NULL;
  struct configwatch *watch = NULL;
  struct control_config ccfg; /* the loops', from cfg */
  sigset_t set;
  char err[512];
  int sig, rc = 1;

  if (load_config(&cfg) != 0)
    goto out;
  config_control(&cfg, &ccfg);
  if (router_init() != 0) {
    fprintf(stderr, "gpugate: malformed route table\n");
    goto out;
  }
  auth = auth_new(&cfg.identity, err, sizeof(err));
  if (!auth) {
    fprintf(stderr, "gpugate: %s\n", err);
    goto out;
  }
  if (cfg.migrate_on_start && migrate(&cfg, 30) != 0)
    goto out;
  pool = db_pool_new(cfg.database_url, cfg.db_pool_size);
  if (!pool)
    goto out;
  db_pool_set_batch(pool, !strcmp(cfg.control.batch_backend, "gcp"));

  /* workers inherit this mask; only the main thread takes the signals */
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  signal(SIGPIPE, SIG_IGN);

  if (logpoll_start(&ccfg, err, sizeof(err)) != 0) /* GET …/logs: 503 */
    log_msg(LOG_WARN, "logs: cannot start the Cloud Logging reader: %s", err);
  http = http_start(&cfg, auth, pool, err, sizeof(err));
  if (!http) {
    fprintf(stderr, "gpugate: %s\n", err);
    goto out;
  }
  if (waker_start(&ccfg) != 0) {
    fprintf(stderr, "gpugate: cannot start the admission waker\n");
    goto out;
  }
  if (events_hub_start(&cfg) != 0) {
    fprintf(stderr, "gpugate: cannot start the event stream listener\n");
    goto out;
  }
  watch = configwatch_start(&ccfg);
  if (!watch) {
    fprintf(stderr, "gpugate: cannot start the configuration watch\n");
    goto out;
  }
  if (!strcmp(cfg.control.batch_backend, "gcp")) {
    dispatch = dispatch_start(&ccfg, err, sizeof(err));
    if (!dispatch) {
      fprintf(stderr, "gpugate: %s\n", err);
      goto out;
    }
  }
  loop = loop_start(&ccfg, dispatch);
  if (!loop) {
    fprintf(stderr, "gpugate: cannot start the admission loop\n");
    goto out;
  }

  if (cfg.port_file[0] && write_port_file(cfg.port_file, http_port(http))) {
    fprintf(stderr, "gpugate: GPUGATE_PORT_FILE: cannot write \"%s\"\n",
            cfg.port_file);
    goto out;
  }
  {
    json_t *f = json_pack("{s:s, s:i, s:i}", "host", cfg.listen_host, "port",
                          (int)http_port(http), "threads", cfg.http_threads);
    log_json(LOG_INFO, "listening", f);
    json_decref(f);
  }
  sigwait(&set, &sig);
  log_msg(LOG_INFO, "shutting down on %s",
          sig == SIGINT ? "SIGINT" : "SIGTERM");
  rc = 0;
out:
  events_hub_stop(); /* resumes its suspended streams: before http_stop */
  logpoll_stop();    /* resumes its suspended streams: before the server */
  http_stop(http);
  loop_stop(loop); /* before the dispatchers it pokes */
  dispatch_stop(dispatch);
  configwatch_stop(watch);
  waker_stop();
  db_pool_free(pool);
  auth_free(auth);
  config_free(&cfg);
  return rc;
}

/* Print a failed apply step: the problem's detail and each field. */
static void print_problem(const char *what, struct gg_req *req)
{
  json_t *e;
  size_t i;

  fprintf(stderr, "gpugate apply: %s: %u %s: %s\n", what,
          problem_status(req->err.code), problem_title(req->err.code),
          req->err.detail);
  json_array_foreach (req->err.fields, i, e) {
    fprintf(stderr, "  %s: %s\n",
            json_string_value(json_object_get(e, "field")),
            json_string_value(json_object_get(e, "message")));
  }
}

/* PUT one object through the same route, validation and storage as the
 * API, as an administrator. Returns 0, or -1 after printing why. */
static int apply_one(struct db_pool *pool, const char *path, json_t *body,
                     int *created, int *updated)
{
  struct gg_req req;
  char allow[64];
  enum gg_code code;
  int rc = -1;

  req_init(&req, pool);
  req.method = "PUT";
  snprintf(req.path, sizeof(req.path), "%s", path);
  snprintf(req.request_id, sizeof(req.request_id), "apply");
  req.principal.role = AUTH_ROLE_ADMIN;
  if (router_match("PUT", req.path, &req.route, &req, allow, sizeof(allow)) !=
      ROUTER_FOUND) {
    fprintf(stderr, "gpugate apply: %s: no such object path\n", path);
    goto out;
  }
  req.json = json_incref(body);
  if (!json_is_object(body)) {
    fprintf(stderr, "gpugate apply: %s: must be a JSON object\n", path);
    goto out;
  }
  code = req.route->handler(&req);
  if (code != GG_OK) {
    if (req.err.code == GG_OK)
      problem_fail(&req, code, "%s", problem_title(code));
    print_problem(path, &req);
    goto out;
  }
  if (req.status == 201)
    (*created)++;
  else
    (*updated)++;
  rc = 0;
out:
  req_cleanup(&req);
  return rc;
}

/* The sections of an apply file, in the order references need. */
static const struct {
  const char *key;
  const char *prefix;
} sections[] = {
    {"priority_classes", "/v1/priority-classes/"},
    {"flavors", "/v1/flavors/"},
    {"cohorts", "/v1/cohorts/"},
    {"cluster_queues", "/v1/cluster-queues/"},
    {"teams", "/v1/teams/"},
    {"team_queues", NULL},
    {"access_bindings", "/v1/access-bindings/"},
};

static int apply_file(struct db_pool *pool, json_t *doc)
{
  const char *key, *name, *qname;
  json_t *val, *body, *q;
  char path[512];
  int created = 0, updated = 0, failed = 0;
  size_t s;

  json_object_foreach (doc, key, val) {
    int known = 0;
    for (s = 0; s < sizeof(sections) / sizeof(sections[0]); s++)
      known |= !strcmp(sections[s].key, key);
    if (!known) {
      fprintf(stderr, "gpugate apply: unknown section \"%s\"\n", key);
      return -1;
    }
  }
  for (s = 0; s < sizeof(sections) / sizeof(sections[0]); s++) {
    val = json_object_get(doc, sections[s].key);
    if (!val)
      continue;
    if (!json_is_object(val)) {
      fprintf(stderr, "gpugate apply: \"%s\" must be an object\n",
              sections[s].key);
      return -1;
    }
    json_object_foreach (val, name, body) {
      if (sections[s].prefix) {
        snprintf(path, sizeof(path), "%s%s", sections[s].prefix, name);
        failed += apply_one(pool, path, body, &created, &updated) != 0;
        continue;
      }
      if (!json_is_object(body)) {
        fprintf(stderr, "gpugate apply: team_queues.%s must be an object\n",
                name);
        failed++;
        continue;
      }
      json_object_foreach (body, qname, q) {
        snprintf(path, sizeof(path), "/v1/teams/%s/queues/%s", name, qname);
        failed += apply_one(pool, path, q, &created, &updated) != 0;
      }
    }
  }
  printf("applied: %d created, %d unchanged or updated, %d failed\n", created,
         updated, failed);
  return failed ? -1 : 0;
}

static int cmd_apply(int argc, char **argv)
{
  struct config cfg;
  struct db_pool *pool = NULL;
  json_error_t jerr;
  json_t *doc = NULL;
  int rc = 1;

  if (argc != 3)
    return usage();
  if (load_config(&cfg) != 0)
    goto out;
  if (router_init() != 0)
    goto out;
  doc = !strcmp(argv[2], "-")
            ? json_loadf(stdin, JSON_REJECT_DUPLICATES, &jerr)
            : json_load_file(argv[2], JSON_REJECT_DUPLICATES, &jerr);
  if (!doc || !json_is_object(doc)) {
    fprintf(stderr, "gpugate apply: %s:%d:%d: %s\n", argv[2], jerr.line,
            jerr.column, doc ? "must be a JSON object" : jerr.text);
    goto out;
  }
  if (cfg.migrate_on_start && migrate(&cfg, 0) != 0)
    goto out;
  pool = db_pool_new(cfg.database_url, 1);
  if (pool && apply_file(pool, doc) == 0)
    rc = 0;
out:
  json_decref(doc);
  db_pool_free(pool);
  config_free(&cfg);
  return rc;
}

static int cmd_token(int argc, char **argv)
{
  struct config cfg;
  const char *team = NULL, *role = NULL, *alg = "HS256", *keyfile = NULL,
             *kid = NULL;
  long ttl = 3600;
  unsigned char *key = NULL;
  size_t keylen = 0;
  char err[512], *token = NULL, *end;
  int i, rc = 1;

  for (i = 2; i < argc; i++) {
    const char *opt = argv[i];
    const char *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (!val)
      return usage();
    if (!strcmp(opt, "--team"))
      team = val;
    else if (!strcmp(opt, "--role"))
      role = val;
    else if (!strcmp(opt, "--alg"))
      alg = val;
    else if (!strcmp(opt, "--key"))
      keyfile = val;
    else if (!strcmp(opt, "--kid"))
      kid = val;
    else if (!strcmp(opt, "--ttl")) {
      errno = 0;
      ttl = strtol(val, &end, 10);
      if (errno || *end || ttl <= 0) {
        fprintf(stderr, "gpugate token: --ttl: expected seconds\n");
        return 2;
      }
    } else
      return usage();
    i++;
  }
  if (!role || (!team && strcmp(role, "member") == 0))
    return usage();
  if (load_config(&cfg) != 0)
    goto out;
  if (keyfile) {
    key = (unsigned char *)file_read(keyfile, (size_t)64 * 1024, &keylen);
    if (!key) {
      fprintf(stderr, "gpugate token: --key: cannot read \"%s\": %s\n", keyfile,
              strerror(errno));
      goto out;
    }
  } else if (!strcmp(alg, "HS256")) {
    if (!cfg.identity.hs256_secret) {
      fprintf(stderr, "gpugate token: GPUGATE_JWT_HS256_SECRET_FILE is not "
                      "set (or pass --alg and --key)\n");
      goto out;
    }
    keylen = cfg.identity.hs256_secret_len;
    key = malloc(keylen);
    if (!key)
      goto out;
    memcpy(key, cfg.identity.hs256_secret, keylen);
  } else {
    fprintf(stderr, "gpugate token: --key is required with --alg %s\n", alg);
    goto out;
  }
  token = auth_mint(&cfg.identity, alg, key, keylen, kid, team, role, ttl,
                    time(NULL), err, sizeof(err));
  if (!token) {
    fprintf(stderr, "gpugate token: %s\n", err);
    goto out;
  }
  printf("%s\n", token);
  rc = 0;
out:
  free(token);
  if (key) {
    memset(key, 0, keylen);
    free(key);
  }
  config_free(&cfg);
  return rc;
}

/*
 * gpugate ingest-billing FILE|-: load a Cloud Billing export (NDJSON) through
 * the same engine as POST /v1/billing/export-rows, on one connection, in
 * 1 MiB reads. Progress ("N rows, R rows/s") goes to stderr when it is a
 * terminal, the report to stdout. Exit 1 when the database failed (batches
 * stored before stay; rerunning is safe) or the file cannot be read;
 * rejected lines are reported, not fatal.
 */
static int cmd_ingest_billing(int argc, char **argv)
{
  const size_t chunk = (size_t)1024 * 1024;
  struct config cfg;
  struct db_conn conn;
  struct billing_ingest *bi = NULL;
  FILE *in = NULL;
  char *buf = NULL, err[512];
  json_t *report = NULL;
  bool tty = isatty(STDERR_FILENO) == 1;
  double last = 0, seconds;
  long rows;
  size_t n;
  int rc = 1;

  memset(&conn, 0, sizeof(conn));
  if (argc != 3)
    return usage();
  if (load_config(&cfg) != 0)
    return 1;
  in = !strcmp(argv[2], "-") ? stdin : fopen(argv[2], "rb");
  if (!in) {
    fprintf(stderr, "gpugate ingest-billing: cannot open \"%s\": %s\n", argv[2],
            strerror(errno));
    goto out;
  }
  if (cfg.migrate_on_start && migrate(&cfg, 0) != 0)
    goto out;
  conn.pg = db_connect(cfg.database_url, err, sizeof(err));
  if (!conn.pg) {
    fprintf(stderr, "gpugate: GPUGATE_DATABASE_URL: cannot connect: %s\n", err);
    goto out;
  }
  buf = malloc(chunk);
  bi = billing_ingest_new(&conn);
  if (!buf || !bi)
    goto out;
  while ((n = fread(buf, 1, chunk, in)) > 0) {
    if (billing_ingest_feed(bi, buf, n) != 0)
      break;
    billing_ingest_progress(bi, &rows, &seconds);
    if (tty && seconds - last >= 0.25) {
      fprintf(stderr, "\r%ld rows, %.0f rows/s", rows,
              seconds > 0 ? (double)rows / seconds : 0.0);
      last = seconds;
    }
  }
  if (ferror(in)) {
    fprintf(stderr, "%sgpugate ingest-billing: cannot read \"%s\": %s\n",
            tty && last > 0 ? "\n" : "", argv[2], strerror(errno));
    goto out;
  }
  report = billing_ingest_finish(bi);
  billing_ingest_progress(bi, &rows, &seconds);
  if (tty && last > 0)
    fprintf(stderr, "\r%ld rows, %.0f rows/s\n", rows,
            seconds > 0 ? (double)rows / seconds : 0.0);
  if (!report) {
    fprintf(stderr,
            "gpugate ingest-billing: the database failed after %ld rows were "
            "stored; they stay stored, and running the same file again is "
            "safe\n",
            billing_ingest_committed(bi));
    goto out;
  }
  json_dumpf(report, stdout, GG_JSON_DUMP);
  fputc('\n', stdout);
  rc = 0;
out:
  json_decref(report);
  billing_ingest_free(bi);
  free(buf);
  PQfinish(conn.pg);
  if (in && in != stdin)
    fclose(in);
  config_free(&cfg);
  return rc;
}

/*
 * gpugate billing-sync: one BigQuery pull of the billing export (the same
 * as the leader's periodic one), a line per day read on stderr, the report
 * on stdout. Exit 1 when it failed (the days replaced before stay).
 */
static int cmd_billing_sync(int argc, char **argv)
{
  struct config cfg;
  struct control_config ccfg;
  struct db_conn conn;
  struct batch_token_source *ts = NULL;
  struct billing_sync_report rep;
  char err[512];
  int rc = 1;

  (void)argv;
  memset(&conn, 0, sizeof(conn));
  if (argc != 2)
    return usage();
  if (load_config(&cfg) != 0)
    return 1;
  config_control(&cfg, &ccfg);
  if (cfg.migrate_on_start && migrate(&cfg, 0) != 0)
    goto out;
  ts = batch_token_new_scoped(&cfg.gcp, BQ_TOKEN_SCOPE, err, sizeof(err));
  if (!ts) {
    fprintf(stderr, "gpugate billing-sync: %s\n", err);
    goto out;
  }
  conn.pg = db_connect(cfg.database_url, err, sizeof(err));
  if (!conn.pg) {
    fprintf(stderr, "gpugate: GPUGATE_DATABASE_URL: cannot connect: %s\n", err);
    goto out;
  }
  if (billing_sync_run(&ccfg, &conn, ts, true, NULL, &rep, err, sizeof(err)) !=
      0) {
    fprintf(stderr, "gpugate billing-sync: %s\n", err);
    goto out;
  }
  printf("{\"days_in_window\": %ld, \"days_read\": %ld, \"rows_read\": %ld, "
         "\"rows_rejected\": %ld, \"calls\": %ld}\n",
         rep.days_remote, rep.days_read, rep.rows_read, rep.rows_rejected,
         rep.calls);
  rc = 0;
out:
  PQfinish(conn.pg);
  batch_token_free(ts);
  config_free(&cfg);
  return rc;
}

int main(int argc, char **argv)
{
  const char *cmd = argc > 1 ? argv[1] : "serve";

  if (!strcmp(cmd, "serve"))
    return argc > 2 ? usage() : cmd_serve();
  if (!strcmp(cmd, "migrate"))
    return cmd_migrate();
  if (!strcmp(cmd, "apply"))
    return cmd_apply(argc, argv);
  if (!strcmp(cmd, "token"))
    return cmd_token(argc, argv);
  if (!strcmp(cmd, "ingest-billing"))
    return cmd_ingest_billing(argc, argv);
  if (!strcmp(cmd, "billing-sync"))
    return cmd_billing_sync(argc, argv);
  if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
    printf("gpugate %s\n", GPUGATE_VERSION);
    return 0;
  }
  return usage();
}
