-- 0038: console sessions follow the provider (SPEC §10 "Identity").
-- A session keeps the provider's session id (the ID token's `sid`), so
-- that an OpenID Connect Back-Channel Logout naming that sid, or the
-- principal's `sub`, ends it on every replica; administrators list and end
-- a principal's sessions by issuer and subject.
ALTER TABLE sessions ADD COLUMN sid text;
CREATE INDEX sessions_principal ON sessions (issuer, subject);
CREATE INDEX sessions_sid ON sessions (issuer, sid) WHERE sid IS NOT NULL;
