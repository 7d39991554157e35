/*
 * bgfetch.h — a cache fill run off its caller, the one mechanism of the
 * key-set cache (jwks.c) and the discovery cache (discovery.c): a fetch
 * runs on a detached thread of its own, so that no request worker waits
 * on the network for it, and a caller that has nothing cached waits for
 * the fetch in flight on the cache's condition variable, at most
 * BGFETCH_WAIT_MS. The caches keep their own slots, single-flight flags
 * and locks; this holds only the thread and the bounded wait.
 */
#ifndef GPUGATE_BGFETCH_H
#define GPUGATE_BGFETCH_H

#include <pthread.h>
#include <stdbool.h>

/* How long a caller with nothing cached waits for the fetch in flight
 * (the fetch itself may take longer: its own timeout is 5 s). */
#define BGFETCH_WAIT_MS 2000L

/*
 * Run fn(arg) on a detached thread of its own; mu, held by the caller,
 * stays held, and fn takes it itself when it stores what it fetched.
 * Where no thread can be made, fn runs here, with mu released meanwhile
 * (the caller finds its slot again afterwards). arg is passed through
 * (fn owns it). Thread-safe.
 */
void bgfetch_start(pthread_mutex_t *mu, void *(*fn)(void *), void *arg);

/*
 * Wait on cv (mu held on entry and on return) while in_flight(key) says a
 * fetch of key is in flight, at most ms. Returns whether one still is.
 * key is borrowed. Thread-safe.
 */
bool bgfetch_await(pthread_mutex_t *mu, pthread_cond_t *cv, long ms,
                   bool (*in_flight)(const char *key), const char *key);

#endif
