-- 0037: a sign-in stays with the browser that started it (login CSRF,
-- RFC 9700 §4.7.1). /auth/login sets the cookie __Host-gpugate_flow and
-- keeps only its SHA-256 (hex) beside the state; /auth/callback takes the
-- flow only with that cookie. Flows in flight at the upgrade have none and
-- can no longer be finished: their users sign in again.
ALTER TABLE auth_flows ADD COLUMN flow_hash text;
