/*
 * hello.c — build/bench_hello: the baseline of the /healthz benchmark
 * (bench/http.sh). A libmicrohttpd hello-world with gpugate's threading
 * model (server/http.c): MHD_USE_EPOLL_INTERNAL_THREAD with a pool of
 * HELLO_THREADS (default 8) threads, the same connection limits, answering
 * every request with the body gpugate's /healthz gives, {"status":"ok"}.
 *
 *   HELLO_LISTEN=127.0.0.1:0 HELLO_PORT_FILE=/tmp/p build/bench_hello
 *
 * SIGINT or SIGTERM stops it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static const char body[] = "{\"status\":\"ok\"}";

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_size, void **state)
{
  struct MHD_Response *r;
  enum MHD_Result ret;

  (void)cls;
  (void)url;
  (void)method;
  (void)version;
  (void)upload;
  if (!*state) { /* first call: headers only */
    *state = conn;
    return MHD_YES;
  }
  *upload_size = 0;
  r = MHD_create_response_from_buffer(sizeof(body) - 1, (void *)body,
                                      MHD_RESPMEM_PERSISTENT);
  if (!r)
    return MHD_NO;
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
  ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
  MHD_destroy_response(r);
  return ret;
}

static int env_uint(const char *name, unsigned dflt, unsigned max,
                    unsigned *out)
{
  const char *v = getenv(name);
  char *end;
  unsigned long n;

  if (!v || !*v) {
    *out = dflt;
    return 0;
  }
  errno = 0;
  n = strtoul(v, &end, 10);
  if (errno || *end || n > max) {
    fprintf(stderr, "bench_hello: %s: expected an integer up to %u\n", name,
            max);
    return -1;
  }
  *out = (unsigned)n;
  return 0;
}

int main(void)
{
  const char *listen = getenv("HELLO_LISTEN");
  const char *port_file = getenv("HELLO_PORT_FILE");
  struct sockaddr_in addr;
  struct MHD_Daemon *d;
  const union MHD_DaemonInfo *info;
  unsigned threads, port = 0;
  char host[64] = "127.0.0.1";
  const char *colon;
  sigset_t set;
  int sig;

  if (env_uint("HELLO_THREADS", 8, 256, &threads) != 0)
    return 2;
  if (listen && *listen) {
    char *end;
    unsigned long p = 0;
    colon = strrchr(listen, ':');
    if (colon) {
      errno = 0;
      p = strtoul(colon + 1, &end, 10);
    }
    if (!colon || (size_t)(colon - listen) >= sizeof(host) || errno ||
        end == colon + 1 || *end || p > 65535) {
      fprintf(stderr, "bench_hello: HELLO_LISTEN: expected host:port\n");
      return 2;
    }
    port = (unsigned)p;
    memcpy(host, listen, (size_t)(colon - listen));
    host[colon - listen] = '\0';
  }
  memset(&addr, 0, sizeof(addr));
  addr.sin_family = AF_INET;
  addr.sin_port = htons((unsigned short)port);
  if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) {
    fprintf(stderr, "bench_hello: HELLO_LISTEN: bad IPv4 address\n");
    return 2;
  }

  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  signal(SIGPIPE, SIG_IGN);

  /* the options of server/http.c that shape throughput */
  d = MHD_start_daemon(
      MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG, 0, NULL,
      NULL, on_request, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
      MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_TIMEOUT,
      (unsigned)30, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(32 * 1024),
      MHD_OPTION_CONNECTION_LIMIT, (unsigned)1024,
      MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1, MHD_OPTION_END);
  if (!d) {
    fprintf(stderr, "bench_hello: cannot listen on %s:%u\n", host, port);
    return 1;
  }
  info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
  if (port_file && *port_file) {
    char tmp[1024];
    FILE *f;
    snprintf(tmp, sizeof(tmp), "%s.tmp", port_file);
    f = fopen(tmp, "w");
    if (!f || fprintf(f, "%u\n", info ? (unsigned)info->port : port) < 0 ||
        fclose(f) != 0 || rename(tmp, port_file) != 0) {
      fprintf(stderr, "bench_hello: HELLO_PORT_FILE: cannot write %s\n",
              port_file);
      MHD_stop_daemon(d);
      return 1;
    }
  }
  sigwait(&set, &sig);
  MHD_stop_daemon(d);
  return 0;
}
