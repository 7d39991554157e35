/*
 * log.c — JSON lines on stderr. Each line is written with one write(2) so
 * lines from concurrent threads never interleave.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/jsonx.h"

static int min_level = LOG_INFO;
static const char *const names[] = {"debug", "info", "warn", "error"};

int log_level_parse(const char *s)
{
  int i;

  for (i = 0; i < 4; i++)
    if (strcmp(s, names[i]) == 0)
      return i;
  return -1;
}

void log_set_level(int level)
{
  min_level = level;
}

int log_enabled(int level)
{
  return level >= min_level;
}

void log_json(int level, const char *msg, json_t *fields)
{
  char ts[40];
  struct timeval tv;
  struct tm tm;
  json_t *line;
  char *text;
  size_t len;

  if (level < min_level || level < 0 || level > LOG_ERROR)
    return;
  gettimeofday(&tv, NULL);
  gmtime_r(&tv.tv_sec, &tm);
  strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
  len = strlen(ts);
  snprintf(ts + len, sizeof(ts) - len, ".%03ldZ", (long)tv.tv_usec / 1000);

  line = json_pack("{s:s, s:s}", "time", ts, "level", names[level]);
  if (!line)
    return;
  json_object_set_new(line, "msg", json_string(msg));
  if (fields)
    json_object_update(line, fields);
  text = json_dumps(line, GG_JSON_DUMP);
  json_decref(line);
  if (!text)
    return;
  len = strlen(text);
  text[len] = '\n'; /* replaces the NUL; written with an explicit length */
  if (write(STDERR_FILENO, text, len + 1) < 0) {
    /* nowhere left to report it */
  }
  free(text);
}

void log_msg(int level, const char *fmt, ...)
{
  char buf[1024];
  va_list ap;

  if (level < min_level)
    return;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  log_json(level, buf, NULL);
}
