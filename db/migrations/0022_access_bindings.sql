-- 0022: access bindings, event actors and console sessions (SPEC §9).
-- Access bindings: which principals of the organisation's OpenID Provider
-- get which role, stored like every administrator object
-- (validated spec, version for ETags). Every replica caches them and
-- reloads on the `gpugate_config` notification sent here at commit, so a
-- request never reads this table.

CREATE TABLE access_bindings (
    name        text PRIMARY KEY,
    spec        json NOT NULL,
    version     bigint NOT NULL DEFAULT 1,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE FUNCTION access_bindings_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('gpugate_config', 'access_bindings');
    RETURN NULL;
END
$$;

CREATE TRIGGER access_bindings_changed
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON access_bindings
    FOR EACH STATEMENT EXECUTE FUNCTION access_bindings_changed();

-- Who caused a job's event: the verified email of whoever submitted or
-- cancelled it, else its `sub` (gpugate's own tokens: "<team>:<role>");
-- NULL for the system's own moves.
ALTER TABLE job_events ADD COLUMN actor text;

-- Console single sign-on (a backend for the frontend): the state of each
-- sign-in in flight (its nonce and PKCE verifier, used once, within ten
-- minutes) and the sessions it opens, so that every replica honours a
-- session and a logout ends it everywhere. Only a session id's SHA-256 is
-- stored; the id itself lives in the browser's HttpOnly cookie.
CREATE TABLE auth_flows (
    state          text PRIMARY KEY,
    nonce          text NOT NULL,
    code_verifier  text NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX auth_flows_created ON auth_flows (created_at);

CREATE TABLE sessions (
    id_hash     text PRIMARY KEY,
    issuer      text NOT NULL,
    subject     text NOT NULL,
    email       text,
    groups      json NOT NULL DEFAULT '[]',
    expires_at  timestamptz NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sessions_expires ON sessions (expires_at);
