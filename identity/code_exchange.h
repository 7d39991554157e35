/*
 * code_exchange.h — the console sign-in's one call to the provider: an
 * authorization code (with its PKCE verifier) exchanged at the token
 * endpoint for the ID token, as a confidential client
 * (client_secret_post).
 */
#ifndef GPUGATE_CODE_EXCHANGE_H
#define GPUGATE_CODE_EXCHANGE_H

#include <stdbool.h>
#include <stddef.h>

/* What the exchange needs. Strings borrowed. */
struct code_exchange {
  const char *token_endpoint;
  const char *client_id, *client_secret;
  const char *code, *code_verifier, *redirect_uri;
};

/*
 * POST the exchange; on success the ID token as a new string (free() it)
 * and the provider's refresh token, if it gives one that fits, into
 * refresh (else ""). NULL with a reason in err (never the secret, the code
 * or a token) otherwise.
 */
char *code_exchange_id_token(const struct code_exchange *x, char *refresh,
                             size_t refresh_len, char *err, size_t errlen);

/*
 * Refresh a session (RFC 6749 §6): x->code holds the refresh token
 * (code_verifier and redirect_uri unused). The fresh ID token as a new
 * string, a rotated refresh token into refresh ("" when kept); NULL with
 * *refused set when the provider refused the grant (the session must end),
 * or unset when it could not be asked.
 */
char *code_exchange_refresh(const struct code_exchange *x, char *refresh,
                            size_t refresh_len, bool *refused, char *err,
                            size_t errlen);

#endif
