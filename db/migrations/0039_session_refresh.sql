-- 0039: sessions re-validated with the provider's refresh token (SPEC §10
-- "Identity"). refresh_token is the provider's (never logged, never listed);
-- refreshed_at is when the session's claims were last read from an ID
-- token; refreshing_until claims the one refresh in flight for a session
-- (another replica or request skips it until then).
ALTER TABLE sessions ADD COLUMN refresh_token text;
ALTER TABLE sessions ADD COLUMN refreshed_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE sessions ADD COLUMN refreshing_until timestamptz;
ALTER TABLE sessions ADD COLUMN nonce text;
