/*
 * words.js — the API's codes in plain words: why a job waits, what an
 * event means. Unknown codes are shown as they are.
 */

const REASONS = {
  InsufficientQuota: 'Waiting for quota: its cluster queue (and what it may borrow from the cohort) has no room for the whole request yet.',
  BudgetExceeded: 'Held: the team has reached its monthly budget and its policy is "hold"; new admissions wait until the budget allows.',
  QueueStopped: 'Held: its cluster queue is stopped by an administrator (stop policy Hold or HoldAndDrain).',
  ClusterQueueStopped: 'Held: its cluster queue is stopped by an administrator.',
  WaitingForHead: 'Waiting behind the head of a StrictFIFO queue: the job ahead must be admitted first.',
  Backoff: 'Backing off after a failed start before trying again.',
  Preempted: 'Preempted: a higher-priority job needed the quota; it will run again as a new attempt.',
  Reclaimed: 'Evicted: another cluster queue of the cohort reclaimed its lent quota; it will run again as a new attempt.',
  Requeued: 'Back in the queue for a new attempt.',
  QuotaReserved: 'Admitted: quota reserved in a flavor.',
  BatchJobCreated: 'Handed to Cloud Batch.',
  BatchRejected: 'Cloud Batch refused the job.',
  FlexStartWaitExceeded: 'Waited too long for Flex Start capacity in one region; trying the next region.',
  WaitingForCapacity: 'Waiting for Cloud Batch to find capacity (the DWS wait).',
  CapacityWindowEnded: 'Evicted: the reservation\'s calendar capacity window is ending.',
  Cancelled: 'Cancelled on request.',
  CancelRequested: 'Cancel requested.',
};

const STATES = {
  PENDING: 'Waiting to be admitted',
  ADMITTED: 'Admitted; the Batch job is being created',
  QUEUED: 'In Cloud Batch, waiting for machines',
  RUNNING: 'Running',
  EVICTING: 'Being stopped to free its quota',
  SUCCEEDED: 'Finished successfully',
  FAILED: 'Failed',
  CANCELLED: 'Cancelled',
};

export function reasonWords(code) {
  if (!code) return '';
  return REASONS[code] || code;
}

export function stateWords(state) {
  return STATES[state] || state || '';
}

export const TERMINAL = ['SUCCEEDED', 'FAILED', 'CANCELLED'];
export const ALL_STATES = ['PENDING', 'ADMITTED', 'QUEUED', 'RUNNING', 'EVICTING', 'SUCCEEDED', 'FAILED', 'CANCELLED'];
