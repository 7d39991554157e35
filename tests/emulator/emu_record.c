/*
 * emu_record.c — an in-memory, bounded request log. Indexes increase
 * monotonically across clears so that "?since=N" stays meaningful.
 */
#include <pthread.h>

#include "tests/emulator/emu_record.h"

#define MAX_ENTRIES 100000

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static json_t *entries; /* array, owned */
static long long next_index;

void emu_record_add(json_t *entry)
{
  if (!entry)
    return;
  pthread_mutex_lock(&mu);
  if (!entries)
    entries = json_array();
  json_object_set_new(entry, "index", json_integer(next_index++));
  if (json_array_size(entries) >= MAX_ENTRIES)
    json_array_remove(entries, 0);
  json_array_append_new(entries, entry);
  pthread_mutex_unlock(&mu);
}

json_t *emu_record_list(long long since)
{
  json_t *out = json_array(), *e;
  size_t i;
  long long next;

  pthread_mutex_lock(&mu);
  json_array_foreach (entries, i, e) {
    if (json_integer_value(json_object_get(e, "index")) >= since)
      json_array_append_new(out, json_deep_copy(e));
  }
  next = next_index;
  pthread_mutex_unlock(&mu);
  return json_pack("{s:o, s:I}", "requests", out, "next", (json_int_t)next);
}

void emu_record_clear(void)
{
  pthread_mutex_lock(&mu);
  json_array_clear(entries);
  pthread_mutex_unlock(&mu);
}

size_t emu_record_count(void)
{
  size_t n;

  pthread_mutex_lock(&mu);
  n = json_array_size(entries);
  pthread_mutex_unlock(&mu);
  return n;
}

void emu_record_free(void)
{
  pthread_mutex_lock(&mu);
  json_decref(entries);
  entries = NULL;
  pthread_mutex_unlock(&mu);
}
