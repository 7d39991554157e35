/*
 * code_exchange.h — the console sign-in's one call to the provider: an
 * authorization code (with its PKCE verifier) exchanged at the token
 * endpoint for the ID token, as a confidential client
 * (client_secret_post).
 */
#ifndef GPUGATE_CODE_EXCHANGE_H
#define GPUGATE_CODE_EXCHANGE_H

#include <stddef.h>

/* What the exchange needs. Strings borrowed. */
struct code_exchange {
  const char *token_endpoint;
  const char *client_id, *client_secret;
  const char *code, *code_verifier, *redirect_uri;
};

/*
 * POST the exchange; on success the ID token as a new string (free() it).
 * NULL with a reason in err (never the secret or the code) otherwise.
 */
char *code_exchange_id_token(const struct code_exchange *x, char *err,
                             size_t errlen);

#endif
