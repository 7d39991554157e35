-- 0042: the provider's refresh tokens sealed at rest (SPEC §10 "Identity";
-- issue 35). A console session keeps the provider's refresh token only as
-- AES-256-GCM ciphertext bound to the session (server/seal.h), under a key
-- derived with HKDF from the deployment's HS256 secret (else the console's
-- client secret) that every replica shares; a copy of the table alone no
-- longer lets anyone refresh at the provider. Tokens kept in the clear
-- before cannot be sealed here (the key is not in the database): those
-- sessions end, and their people sign in again once.
ALTER TABLE sessions ADD COLUMN refresh_sealed text;
DELETE FROM sessions WHERE refresh_token IS NOT NULL;
ALTER TABLE sessions DROP COLUMN refresh_token;
