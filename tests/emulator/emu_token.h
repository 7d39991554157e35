/*
 * emu_token.h — the two ways gpugate gets an access token, emulated: the
 * GCE metadata server and Google's OAuth2 token endpoint with an RS256
 * JWT-bearer grant; plus the store of issued tokens the Batch API checks.
 * Thread-safe. Tokens are never logged.
 */
#ifndef GPUGATE_EMU_TOKEN_H
#define GPUGATE_EMU_TOKEN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "tests/emulator/emu_http.h"

/*
 * Load the service-account public key named by EMU_SA_PUBLIC_KEY, if any.
 * Returns 0, or -1 with a message in err.
 */
int emu_token_init(const char *pem_path, char *err, size_t errlen);

/* Free the key and the token store. */
void emu_token_shutdown(void);

/* True when token was issued here and has not expired nor been revoked. */
bool emu_token_valid(const char *token);

/* Forget every issued token (DELETE /emulator/tokens). Returns how many. */
size_t emu_token_revoke_all(void);

/* How many issued tokens are still valid. */
size_t emu_token_count(void);

/*
 * A token-endpoint body as it may be logged (new reference): form fields,
 * with a JWT assertion replaced by its decoded header and claims.
 */
json_t *emu_token_redacted_form(const char *body);

/* GET /computeMetadata/v1/instance/service-accounts/default/token */
void emu_token_metadata(struct emu_req *r);

/* GET /computeMetadata/v1/project/project-id */
void emu_token_project_id(struct emu_req *r);

/* POST /token (grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer) */
void emu_token_oauth(struct emu_req *r);

#endif
