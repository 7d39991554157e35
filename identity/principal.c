/*
 * principal.c — role names: the claim and binding values "member",
 * "admin", "finance" and "metrics" and their enum auth_role.
 */
#include <string.h>

#include "identity/principal.h"

/* "member" | "admin" | "finance" | "metrics" → role; AUTH_ROLE_NONE
 * otherwise or NULL. */
enum auth_role auth_role_parse(const char *s)
{
  if (!s)
    return AUTH_ROLE_NONE;
  if (strcmp(s, "member") == 0)
    return AUTH_ROLE_MEMBER;
  if (strcmp(s, "admin") == 0)
    return AUTH_ROLE_ADMIN;
  if (strcmp(s, "finance") == 0)
    return AUTH_ROLE_FINANCE;
  if (strcmp(s, "metrics") == 0)
    return AUTH_ROLE_METRICS;
  return AUTH_ROLE_NONE;
}

/* Claim value of a single role; "none" for AUTH_ROLE_NONE or a bit set. */
const char *auth_role_name(enum auth_role r)
{
  switch (r) {
  case AUTH_ROLE_MEMBER:
    return "member";
  case AUTH_ROLE_ADMIN:
    return "admin";
  case AUTH_ROLE_FINANCE:
    return "finance";
  case AUTH_ROLE_METRICS:
    return "metrics";
  case AUTH_ROLE_NONE:
  default:
    return "none";
  }
}
