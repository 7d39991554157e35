/*
 * emu_serve.h — the start-up the one-binary Google emulators share
 * (tests/emulator/bq_emulator.c, log_emulator.c): listen on an IPv4
 * "host:port" from the environment (default 127.0.0.1, an ephemeral
 * port), one thread per connection, publish the bound port in a file,
 * then serve until SIGTERM or SIGINT.
 */
#ifndef GPUGATE_EMU_SERVE_H
#define GPUGATE_EMU_SERVE_H

#include <microhttpd.h>

/*
 * Serve handle and done as name ("bigquery_emulator"): the address is
 * getenv(listen_env), the bound port is written to getenv(port_file_env)
 * when set (atomically: a temporary file renamed), and about follows the
 * address in the "listening on" line on stderr. Returns 0 once stopped by
 * a signal, 1 when it cannot listen or write the port file.
 */
int emu_serve(const char *name, const char *listen_env,
              const char *port_file_env, MHD_AccessHandlerCallback handle,
              MHD_RequestCompletedCallback done, const char *about);

#endif
