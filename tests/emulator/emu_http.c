/*
 * emu_http.c — libmicrohttpd daemon, route matching and the request
 * pipeline for the Batch emulator. A request is recorded before its reply
 * is queued, so a test that has its answer also finds it in the log.
 *
 * The latency model (EMU_LATENCY_MS) delays a Batch call in its own
 * connection's thread, after the checks a real Batch makes on arrival
 * (faults, auth, quota: the quota counts arrivals) and before the handler
 * acts, so many delayed calls proceed at once and none holds up another.
 * The calls under way are counted per kind, with the most seen at once.
 */
#include <arpa/inet.h>
#include <pthread.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "lib/log.h"
#include "tests/emulator/emu_batch.h"
#include "tests/emulator/emu_config.h"
#include "tests/emulator/emu_control.h"
#include "tests/emulator/emu_fault.h"
#include "tests/emulator/emu_latency.h"
#include "tests/emulator/emu_http.h"
#include "tests/emulator/emu_oidc.h"
#include "tests/emulator/emu_quota.h"
#include "tests/emulator/emu_record.h"
#include "tests/emulator/emu_token.h"
#include "tests/emulator/emu_util.h"

struct route {
  const char *method;
  const char *pattern;
  emu_handler handler;
  enum emu_route_kind kind;
  enum emu_call call; /* for the latency model */
};

static const struct route routes[] = {
#define EMU_ROUTE(m, p, h, k, c) {#m, p, h, k, EMU_CALL_##c},
#include "tests/emulator/routes.def"
#undef EMU_ROUTE
};
#define N_ROUTES (sizeof(routes) / sizeof(routes[0]))

static struct MHD_Daemon *daemon_;

/* Batch calls under way (between arrival and reply) per kind, and the most
 * at once since the start or the last emu_http_reset_in_flight(). */
static pthread_mutex_t flight_mu = PTHREAD_MUTEX_INITIALIZER;
static long in_flight[EMU_CALL_N], max_in_flight[EMU_CALL_N];

static void flight_add(enum emu_call k, long d)
{
  pthread_mutex_lock(&flight_mu);
  in_flight[k] += d;
  if (in_flight[k] > max_in_flight[k])
    max_in_flight[k] = in_flight[k];
  pthread_mutex_unlock(&flight_mu);
}

json_t *emu_http_in_flight(void)
{
  json_t *now = json_object(), *most = json_object();
  int k;

  pthread_mutex_lock(&flight_mu);
  for (k = EMU_CALL_CREATE; k < EMU_CALL_N; k++) {
    json_object_set_new(now, emu_call_name(k), json_integer(in_flight[k]));
    json_object_set_new(most, emu_call_name(k), json_integer(max_in_flight[k]));
  }
  pthread_mutex_unlock(&flight_mu);
  return json_pack("{s:o, s:o}", "inFlight", now, "maxInFlight", most);
}

void emu_http_reset_in_flight(void)
{
  int k;

  pthread_mutex_lock(&flight_mu);
  for (k = 0; k < EMU_CALL_N; k++)
    max_in_flight[k] = in_flight[k];
  pthread_mutex_unlock(&flight_mu);
}

/* Wait as long as the latency model draws for a call of kind k. */
static void delay(const struct emu_config *c, enum emu_call k)
{
  long ms;

  if (c->latency.median_ms[k] <= 0)
    return;
  ms = emu_latency_draw(&c->latency, k, 1.0 - emu_rand(EMU_RAND_LATENCY),
                        emu_rand(EMU_RAND_LATENCY));
  emu_sleep_ms(ms);
}

static const char JSON_TYPE[] = "application/json; charset=UTF-8";

const char *emu_req_query(const struct emu_req *r, const char *key)
{
  return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

const char *emu_req_header(const struct emu_req *r, const char *name)
{
  return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

void emu_reply_json(struct emu_req *r, unsigned status, json_t *body)
{
  free(r->reply_text);
  r->reply_text =
      body ? json_dumps(body, JSON_COMPACT | JSON_REAL_PRECISION(12)) : NULL;
  json_decref(body);
  r->status = status;
  r->content_type = JSON_TYPE;
}

void emu_reply_text(struct emu_req *r, unsigned status, const char *ctype,
                    const char *text)
{
  free(r->reply_text);
  r->reply_text = strdup(text);
  r->status = status;
  r->content_type = ctype;
}

void emu_reply_error(struct emu_req *r, unsigned status, const char *rpc_status,
                     json_t *details, const char *fmt, ...)
{
  char msg[1024];
  va_list ap;
  json_t *err;

  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  err = json_pack("{s:i, s:s, s:s}", "code", (int)status, "message", msg,
                  "status",
                  rpc_status ? rpc_status : emu_fault_status_name(status));
  if (err && details)
    json_object_set_new(err, "details", details);
  else
    json_decref(details);
  emu_reply_json(r, status, json_pack("{s:o}", "error", err));
}

/* "{}" captures a segment up to '/' or ':'. */
static bool match(const char *pattern, const char *path, struct emu_req *r)
{
  const char *p = pattern, *s = path;
  int k = 0;

  while (*p) {
    if (p[0] == '{' && p[1] == '}') {
      size_t len = strcspn(s, "/:");
      if (len == 0 || len >= EMU_PARAM_MAX || k >= EMU_MAX_PARAMS)
        return false;
      memcpy(r->params[k], s, len);
      r->params[k][len] = '\0';
      k++;
      s += len;
      p += 2;
    } else if (*p++ != *s++) {
      return false;
    }
  }
  if (*s)
    return false;
  r->n_params = k;
  return true;
}

/* The route for r; NULL with allow[] filled when only the method differs. */
static const struct route *find_route(struct emu_req *r, char *allow,
                                      size_t allowlen)
{
  size_t i, used = 0;

  allow[0] = '\0';
  for (i = 0; i < N_ROUTES; i++) {
    if (!match(routes[i].pattern, r->path, r))
      continue;
    if (!strcmp(routes[i].method, r->method))
      return &routes[i];
    if (used < allowlen)
      used += (size_t)snprintf(allow + used, allowlen - used, "%s%s",
                               used ? ", " : "", routes[i].method);
  }
  r->n_params = 0;
  return NULL;
}

static enum MHD_Result add_arg(void *cls, enum MHD_ValueKind kind,
                               const char *key, const char *value)
{
  (void)kind;
  json_object_set_new(cls, key, value ? json_string(value) : json_null());
  return MHD_YES;
}

/* The body as logged: never a bearer token; JSON when it parses. */
static json_t *logged_body(struct emu_req *r, enum emu_route_kind kind)
{
  json_t *v;

  /* copies: the log outlives the request and is read by other threads */
  if (r->record_body)
    return json_deep_copy(r->record_body);
  if (!r->body)
    return json_null();
  if (kind == EMU_TOKEN)
    return emu_token_redacted_form(r->body);
  if (r->json)
    return json_deep_copy(r->json);
  v = json_loads(r->body, JSON_DECODE_ANY, NULL);
  return v ? v : json_string(r->body);
}

static void record(struct emu_req *r, enum emu_route_kind kind, unsigned status,
                   enum emu_fault_kind fault)
{
  const char *ctype = emu_req_header(r, MHD_HTTP_HEADER_CONTENT_TYPE);
  const char *fault_name = emu_fault_kind_name(fault);
  json_t *query;

  if (kind == EMU_CONTROL)
    return;
  query = json_object();
  MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, add_arg, query);
  emu_record_add(
      json_pack("{s:s, s:I, s:s, s:s, s:o, s:b, s:o, s:o, s:i, s:o, s:I}",
                "time", r->time, "atMs", (json_int_t)r->started_ms, "method",
                r->method, "path", r->path, "query", query, "authorization",
                emu_req_header(r, MHD_HTTP_HEADER_AUTHORIZATION) != NULL,
                "contentType", ctype ? json_string(ctype) : json_null(), "body",
                logged_body(r, kind), "status", (int)status, "fault",
                fault_name ? json_string(fault_name) : json_null(),
                "durationMs", (json_int_t)(emu_now_ms() - r->started_ms)));
}

static bool authorized(const struct emu_req *r)
{
  const char *h = emu_req_header(r, MHD_HTTP_HEADER_AUTHORIZATION);

  if (!h || strncasecmp(h, "Bearer ", 7) != 0)
    return false;
  h += 7;
  while (*h == ' ')
    h++;
  return emu_token_valid(h);
}

static void inject_error(struct emu_req *r, const struct emu_fault *f)
{
  json_t *details = NULL;

  if (f->code == 429) {
    char delay[32];
    snprintf(r->retry_after, sizeof(r->retry_after), "%lld", f->retry_after_s);
    snprintf(delay, sizeof(delay), "%llds", f->retry_after_s);
    details = json_pack("[{s:s, s:s}]", "@type",
                        "type.googleapis.com/google.rpc.RetryInfo",
                        "retryDelay", delay);
    emu_reply_error(r, 429, "RESOURCE_EXHAUSTED", details,
                    "Quota exceeded for quota metric 'Job mutation requests' "
                    "(injected by the emulator).");
    return;
  }
  emu_reply_error(r, f->code, NULL, NULL,
                  "Injected failure %u from the Batch emulator.", f->code);
}

/* Run everything but the send for r, which matched route (NULL: none).
 * Returns false when the connection must close. */
static bool pipeline(struct emu_req *r, const struct route *route)
{
  enum emu_route_kind kind =
      route ? route->kind
            : (!strncmp(r->path, "/emulator/", 10) ? EMU_CONTROL : EMU_API);
  struct emu_fault f = {EMU_FAULT_NONE, 0, 0, false, 0, false, false};
  struct emu_config c;

  if (kind != EMU_CONTROL)
    emu_fault_draw(kind == EMU_TOKEN, r->method, r->path,
                   emu_call_name(route ? route->call : EMU_CALL_OTHER), &f);
  switch (f.kind) {
  case EMU_FAULT_RESET:
    record(r, kind, 0, f.kind);
    return false;
  case EMU_FAULT_TIMEOUT:
    emu_sleep_ms((long)f.timeout_ms);
    if (f.timeout_slow)
      break; /* a slow answer, not a failed one */
    if (f.timeout_reset) {
      record(r, kind, 0, f.kind);
      return false;
    }
    emu_reply_error(r, 503, "UNAVAILABLE", NULL,
                    "The service is currently unavailable (injected timeout).");
    record(r, kind, r->status, f.kind);
    return true;
  case EMU_FAULT_ERROR:
    inject_error(r, &f);
    record(r, kind, r->status, f.kind);
    return true;
  case EMU_FAULT_NONE:
  case EMU_FAULT_LOST_RESPONSE:
    break;
  }

  emu_config_get(&c);
  if (!route && r->allow[0]) {
    emu_reply_error(r, 405, "UNIMPLEMENTED", NULL,
                    "Method %s is not allowed on %s (allowed: %s).", r->method,
                    r->path, r->allow);
  } else if (!route) {
    emu_reply_error(r, 404, "NOT_FOUND", NULL, "No route for %s %s.", r->method,
                    r->path);
  } else if (r->body_too_large) {
    emu_reply_error(r, 413, "INVALID_ARGUMENT", NULL,
                    "Request payload size exceeds the limit: %zu bytes.",
                    EMU_BODY_MAX);
  } else if (kind == EMU_API && c.require_auth && !authorized(r)) {
    r->www_authenticate = true;
    emu_reply_error(r, 401, "UNAUTHENTICATED", NULL,
                    "Request is missing required authentication credential. "
                    "Expected OAuth 2 access token, login cookie or other "
                    "valid authentication credential.");
  } else if (kind == EMU_API &&
             !emu_quota_admit(r->method, r->path, r->started_ms)) {
    snprintf(r->retry_after, sizeof(r->retry_after), "1");
    emu_reply_error(r, 429, "RESOURCE_EXHAUSTED", NULL,
                    "Quota exceeded for quota metric 'Job mutation requests' "
                    "and limit 'Job mutation requests per minute per "
                    "region'.");
  } else if (kind != EMU_TOKEN && r->body && r->body_len &&
             !(r->json =
                   json_loadb(r->body, r->body_len, JSON_DECODE_ANY, NULL))) {
    emu_reply_error(r, 400, "INVALID_ARGUMENT", NULL,
                    "Invalid JSON payload received.");
  } else {
    delay(&c, route->call);
    route->handler(r);
    if (!r->status)
      emu_reply_error(r, 500, "INTERNAL", NULL, "The handler set no reply.");
  }
  if (f.kind == EMU_FAULT_LOST_RESPONSE && f.lost_503) {
    /* the call took effect; its answer is a 503, as from a front end
     * that lost the backend's reply */
    free(r->reply_text);
    r->reply_text = NULL;
    r->retry_after[0] = '\0';
    emu_reply_error(r, 503, "UNAVAILABLE", NULL,
                    "The service is currently unavailable (the call took "
                    "effect; its answer was lost).");
    record(r, kind, r->status, f.kind);
    return true;
  }
  record(r, kind, f.kind == EMU_FAULT_LOST_RESPONSE ? 0 : r->status, f.kind);
  return f.kind != EMU_FAULT_LOST_RESPONSE;
}

static enum MHD_Result send_reply(struct MHD_Connection *conn,
                                  struct emu_req *r)
{
  struct MHD_Response *resp;
  enum MHD_Result ret;
  size_t len = r->reply_text ? strlen(r->reply_text) : 0;

  resp = MHD_create_response_from_buffer(
      len, r->reply_text ? (void *)r->reply_text : (void *)"",
      r->reply_text ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
  if (!resp)
    return MHD_NO;
  r->reply_text = NULL; /* now MHD's */
  if (r->content_type && len)
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                            r->content_type);
  if (r->retry_after[0])
    MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, r->retry_after);
  if (r->www_authenticate)
    MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                            "Bearer realm=\"https://accounts.google.com/\"");
  if (r->status == 405 && r->allow[0])
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, r->allow);
  if (r->cache_control)
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
                            r->cache_control);
  ret = MHD_queue_response(conn, r->status, resp);
  MHD_destroy_response(resp);
  return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
                                  const char *url, const char *method,
                                  const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
  struct emu_req *r = *con_cls;

  (void)cls;
  (void)version;
  if (!r) {
    r = calloc(1, sizeof(*r));
    if (!r)
      return MHD_NO;
    r->method = method;
    r->conn = conn;
    r->started_ms = emu_now_ms();
    emu_rfc3339(r->time, sizeof(r->time));
    /* a longer URL is cut short here and then matches no route: 404 */
    snprintf(r->path, sizeof(r->path), "%s", url);
    *con_cls = r;
    return MHD_YES;
  }
  if (*upload_data_size) {
    size_t n = *upload_data_size;
    char *grown;

    *upload_data_size = 0;
    if (r->body_too_large || r->body_len + n > EMU_BODY_MAX) {
      r->body_too_large = true;
      return MHD_YES;
    }
    grown = realloc(r->body, r->body_len + n + 1);
    if (!grown)
      return MHD_NO;
    r->body = grown;
    memcpy(r->body + r->body_len, upload_data, n);
    r->body_len += n;
    r->body[r->body_len] = '\0';
    return MHD_YES;
  }
  {
    const struct route *route = find_route(r, r->allow, sizeof(r->allow));
    enum emu_call k = route ? route->call : EMU_CALL_OTHER;
    bool sent;

    flight_add(k, 1);
    sent = pipeline(r, route);
    flight_add(k, -1);
    if (!sent)
      return MHD_NO;
  }
  return send_reply(conn, r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
  struct emu_req *r = *con_cls;

  (void)cls;
  (void)conn;
  (void)toe;
  if (!r)
    return;
  free(r->body);
  free(r->reply_text);
  json_decref(r->json);
  json_decref(r->record_body);
  free(r);
  *con_cls = NULL;
}

/* libmicrohttpd's own messages (e.g. each injected reset) at debug level. */
static void mhd_logger(void *cls, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

static void mhd_logger(void *cls, const char *fmt, va_list ap)
{
  char msg[512];
  size_t n;

  (void)cls;
  if (!log_enabled(LOG_DEBUG))
    return;
  vsnprintf(msg, sizeof(msg), fmt, ap);
  n = strlen(msg);
  while (n && msg[n - 1] == '\n')
    msg[--n] = '\0';
  log_msg(LOG_DEBUG, "emulator: libmicrohttpd: %s", msg);
}

int emu_http_start(const char *host, unsigned short port, unsigned short *bound)
{
  struct sockaddr_in sa;
  const union MHD_DaemonInfo *info;

  memset(&sa, 0, sizeof(sa));
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  if (!strcmp(host, "localhost"))
    host = "127.0.0.1";
  if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
    log_msg(LOG_ERROR,
            "emulator: EMU_LISTEN host \"%s\" is not an IPv4 "
            "address",
            host);
    return -1;
  }
  daemon_ = MHD_start_daemon(
      MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
          MHD_USE_POLL | MHD_USE_ERROR_LOG,
      0, NULL, NULL, on_request, NULL, MHD_OPTION_SOCK_ADDR,
      (struct sockaddr *)&sa, MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
      MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, NULL,
      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120, MHD_OPTION_END);
  if (!daemon_) {
    log_msg(LOG_ERROR, "emulator: cannot listen on %s:%u", host, port);
    return -1;
  }
  info = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT);
  *bound = info ? info->port : port;
  return 0;
}

void emu_http_stop(void)
{
  if (daemon_)
    MHD_stop_daemon(daemon_);
  daemon_ = NULL;
}
