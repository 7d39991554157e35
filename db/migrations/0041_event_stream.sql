-- 0041: the live event stream (GET /v1/teams/{team}/events, SPEC §10).
--
-- The stream's order and its resumable cursor. job_events.id is a
-- sequence value, taken when the row is inserted, so ids commit out of
-- order: a reader that has passed id 11 can later see id 10 commit, and a
-- cursor "after 11" would lose it. Each row therefore records the 64-bit
-- id of the transaction that wrote it (xid8), and the stream is read in
-- (xid, id) order only below the oldest transaction still running
-- (pg_snapshot_xmin of the reader's snapshot): every transaction below
-- that horizon has ended, so no row can ever appear behind a cursor that
-- was handed out. The order is the writers' transaction order, a total
-- order every replica reads alike. It differs from commit order only for
-- a transaction that took its xid before another one committed and then
-- wrote after it; two moves of one job are serialised by the job row's
-- lock, so a job's own events swap only when a writer took its xid before
-- waiting on that lock (rare; each event is still sent exactly once).
-- A long transaction holds the horizon back: its wait delays the stream,
-- never reorders or loses it. Rows written before
-- this migration have no xid and are only read per job (as xid 0).
ALTER TABLE job_events ADD COLUMN xid xid8;
ALTER TABLE job_events ALTER COLUMN xid SET DEFAULT pg_current_xact_id();
CREATE INDEX job_events_stream ON job_events (xid, id) WHERE xid IS NOT NULL;

-- Queue position changes join the stream the same way: each write of a
-- job's position row takes the writer's xid and a number from the events'
-- sequence, so the two tables share one order. A resumed stream sees a
-- job's latest position (intermediate ones may be coalesced).
ALTER TABLE job_positions ADD COLUMN xid xid8, ADD COLUMN sid bigint;
CREATE INDEX job_positions_stream ON job_positions (xid, sid)
    WHERE xid IS NOT NULL;

CREATE FUNCTION job_positions_stamp() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.xid := pg_current_xact_id();
    NEW.sid := nextval(pg_get_serial_sequence('job_events', 'id'));
    RETURN NEW;
END
$$;

CREATE TRIGGER job_positions_stamp BEFORE INSERT OR UPDATE ON job_positions
    FOR EACH ROW EXECUTE FUNCTION job_positions_stamp();

-- The wake-up of each replica's listener (server/events_hub.c). A NOTIFY
-- serialises the commits of the transactions that send one (db/jobs_submit.c),
-- so the submission's own first event (from_state NULL) sends none: the
-- admission waker's coalesced gpugate_admission notice, which the listener
-- also hears, covers it. Later moves are fewer, and pg_notify folds the
-- identical notices of one transaction into one. The listener also reads
-- on a timer, so a missed notice delays an event, never loses it.
CREATE FUNCTION job_events_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('gpugate_events', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER job_events_notify AFTER INSERT ON job_events
    FOR EACH ROW WHEN (NEW.from_state IS NOT NULL)
    EXECUTE FUNCTION job_events_notify();
CREATE TRIGGER job_positions_notify AFTER INSERT OR UPDATE ON job_positions
    FOR EACH STATEMENT EXECUTE FUNCTION job_events_notify();
