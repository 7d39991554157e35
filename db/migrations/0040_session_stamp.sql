-- 0040: console sessions cached per replica, still ended everywhere at once
-- (SPEC §10 "Identity"; issue 35).
--
-- Each replica keeps the sessions it has verified in memory, so that a
-- request with the session cookie does not read PostgreSQL. session_stamp
-- is one row whose n moves whenever a session ends early: one is deleted
-- (sign-out, DELETE /v1/sessions, Back-Channel Logout, a refused refresh,
-- the sweep of expired ones), its email or groups change (a refresh) or
-- its expiry is brought forward.
-- A replica reads n at most once a second and uses its cache only within
-- a second of a read that found n unchanged; a change empties the cache.
-- A session's own end needs no stamp: a cached entry lapses at it.
CREATE TABLE session_stamp (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    n bigint NOT NULL
);
INSERT INTO session_stamp (one, n) VALUES (true, 0);

CREATE FUNCTION session_stamp_bump() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE session_stamp SET n = n + 1;
    RETURN NULL;
END
$$;

-- a DELETE that removed nothing (a sign-in's sweep of expired sessions
-- usually finds none) leaves the caches alone
CREATE FUNCTION session_stamp_bump_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM gone) THEN
        UPDATE session_stamp SET n = n + 1;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER sessions_deleted AFTER DELETE ON sessions
    REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION session_stamp_bump_deleted();
CREATE TRIGGER sessions_truncated AFTER TRUNCATE ON sessions
    FOR EACH STATEMENT EXECUTE FUNCTION session_stamp_bump();
CREATE TRIGGER sessions_changed
    AFTER UPDATE OF email, groups, expires_at ON sessions
    FOR EACH ROW
    WHEN (OLD.email IS DISTINCT FROM NEW.email
          OR OLD.groups::text IS DISTINCT FROM NEW.groups::text
          OR NEW.expires_at < OLD.expires_at)
    EXECUTE FUNCTION session_stamp_bump();
