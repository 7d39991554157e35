/*
 * bindings.c — the one statement that reads the access bindings whole.
 */
#include <stdio.h>

#include "db/bindings.h"

#define STR_(x) #x
#define STR(x) STR_(x)

static const char sql_read[] =
    "SELECT name, spec FROM access_bindings ORDER BY name "
    "LIMIT " STR(DB_BINDINGS_MAX);

int db_bindings_read(PGconn *pg, json_t **out, char *err, size_t errlen)
{
  PGresult *res = PQexecParams(pg, sql_read, 0, NULL, NULL, NULL, NULL, 0);
  json_t *all = NULL, *spec; /* new */
  int i, rows, rc = -1;

  *out = NULL;
  if (PQresultStatus(res) != PGRES_TUPLES_OK) {
    snprintf(err, errlen, "reading access bindings: %s", PQerrorMessage(pg));
    goto out;
  }
  rows = PQntuples(res);
  all = json_array();
  for (i = 0; i < rows; i++) {
    spec = json_loads(PQgetvalue(res, i, 1), 0, NULL);
    if (!json_is_object(spec)) {
      json_decref(spec);
      continue;
    }
    json_object_set_new(spec, "name", json_string(PQgetvalue(res, i, 0)));
    json_array_append_new(all, spec);
  }
  *out = all;
  all = NULL;
  rc = 0;
out:
  json_decref(all);
  PQclear(res);
  return rc;
}
