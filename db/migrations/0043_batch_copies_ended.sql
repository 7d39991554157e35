-- 0043: a raced copy's end is recorded (issue 34, defect 6). A raced job
-- without a winner is cancelled or evicted by cancelling every copy, and
-- its quota goes back only when every copy that may exist has been
-- reported ended or absent (db/batch.c, the invariant); before, the first
-- copy's end (even its CANCELLATION_IN_PROGRESS) ended the job while the
-- others could still run. ended_at: when Batch reported this copy
-- CANCELLED, SUCCEEDED, FAILED, DELETION_IN_PROGRESS or absent.
ALTER TABLE batch_copies ADD COLUMN ended_at timestamptz;
