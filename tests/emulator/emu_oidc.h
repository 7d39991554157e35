/*
 * emu_oidc.h — the emulator as Google's OIDC token issuer for Pub/Sub push
 * authentication: one RSA key (EMU_OIDC_KEY, or made at start), its JWK
 * set at GET /oauth2/v3/certs, and RS256 ID tokens for the pushes
 * (EMU_PUSH_AUDIENCE, EMU_PUSH_SERVICE_ACCOUNT). Thread-safe after init.
 */
#ifndef GPUGATE_EMU_OIDC_H
#define GPUGATE_EMU_OIDC_H

#include <stddef.h>

#include "tests/emulator/emu_http.h"

/* Load the private key at pem_path ("" = generate one). 0 or -1 + err. */
int emu_oidc_init(const char *pem_path, char *err, size_t errlen);

/* Free the key. */
void emu_oidc_shutdown(void);

/* GET /oauth2/v3/certs: {"keys": [{kty, alg, use, kid, n, e}]}. */
void emu_oidc_certs(struct emu_req *r);

/*
 * A new Google-style ID token (free() it) for audience and email, valid
 * for an hour from now, or NULL.
 */
char *emu_oidc_token(const char *audience, const char *email);

#endif
