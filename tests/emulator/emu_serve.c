/*
 * emu_serve.c — the Google emulators' shared start-up (see emu_serve.h).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/emulator/emu_serve.h"

int emu_serve(const char *name, const char *listen_env,
              const char *port_file_env, MHD_AccessHandlerCallback handle,
              MHD_RequestCompletedCallback done, const char *about)
{
  const char *listen = getenv(listen_env), *port_file;
  char host[64] = "127.0.0.1";
  unsigned short port = 0;
  struct MHD_Daemon *d;
  struct sockaddr_in addr;
  const union MHD_DaemonInfo *info;
  sigset_t set;
  int sig;

  if (listen && *listen) {
    const char *colon = strrchr(listen, ':');
    if (colon && (size_t)(colon - listen) < sizeof(host)) {
      snprintf(host, sizeof(host), "%.*s", (int)(colon - listen), listen);
      port = (unsigned short)strtoul(colon + 1, NULL, 10);
    }
  }
  memset(&addr, 0, sizeof(addr));
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) {
    fprintf(stderr, "%s: %s: not an IPv4 address\n", name, listen_env);
    return 1;
  }
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  d = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, port,
      NULL, NULL, handle, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
      MHD_OPTION_NOTIFY_COMPLETED, done, NULL, MHD_OPTION_END);
  if (!d) {
    fprintf(stderr, "%s: cannot listen on %s:%u\n", name, host, port);
    return 1;
  }
  info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
  port = info ? info->port : port;
  port_file = getenv(port_file_env);
  if (port_file && *port_file) {
    char tmp[600];
    FILE *f;
    snprintf(tmp, sizeof(tmp), "%s.tmp", port_file);
    f = fopen(tmp, "w");
    if (!f || fprintf(f, "%u\n", port) < 0 || fclose(f) != 0 ||
        rename(tmp, port_file) != 0) {
      fprintf(stderr, "%s: cannot write %s\n", name, port_file);
      MHD_stop_daemon(d);
      return 1;
    }
  }
  fprintf(stderr, "%s: listening on %s:%u (%s)\n", name, host, port, about);
  sigwait(&set, &sig);
  MHD_stop_daemon(d);
  return 0;
}
