// Execution states: the buckets of GET /v1/executions?state= and
// GET /v1/execution-counts, and how a pending_state is shown.

import { h, parseTime, localTime } from './dom.js';

// BUCKETS are the counted states, in display order.
export const BUCKETS = [
  ['locked', 'Locked'],
  ['pending', 'Pending'],
  ['scheduled', 'Scheduled'],
  ['blocked', 'Blocked'],
  ['paused', 'Paused'],
  ['cancelling', 'Cancelling'],
  ['finished_ok', 'Finished OK'],
  ['finished_error', 'Finished error'],
  ['finished_execution_failure', 'Execution failure'],
];

// STATE_FILTERS are the values of the state filter (BUCKETS plus "finished").
export const STATE_FILTERS = [...BUCKETS.slice(0, 6), ['finished', 'Finished (any)'], ...BUCKETS.slice(6)];

// inner returns the state's details (paused and cancelling wrap the underlying state).
function inner(ps) {
  if (ps.status === 'paused' || ps.status === 'cancelling') {
    const [k, v] = Object.entries(ps).find(([key]) => key !== 'status') || [];
    return { kind: k, ...(v || {}) };
  }
  return ps;
}

// bucketOf returns the bucket of a pending_state at now (ms).
export function bucketOf(ps, now = Date.now()) {
  switch (ps.status) {
    case 'locked':
      return 'locked';
    case 'pending_at':
      return parseTime(ps.scheduled_at) > now ? 'scheduled' : 'pending';
    case 'blocked_by_join_set':
      return 'blocked';
    case 'paused':
      return 'paused';
    case 'cancelling':
      return 'cancelling';
    case 'finished': {
      const rk = ps.result_kind;
      if (rk === 'ok') return 'finished_ok';
      if (rk && rk.err === 'error') return 'finished_error';
      return 'finished_execution_failure';
    }
  }
  return 'unknown';
}

export const isFinished = (ps) => ps && ps.status === 'finished';

// failureKind returns the execution failure kind of a finished state, if any.
export function failureKind(ps) {
  const rk = ps.result_kind;
  return rk && rk.err && typeof rk.err === 'object' ? rk.err.execution_failure : '';
}

// describe returns a one-line description of a pending_state.
export function describe(ps, now = Date.now()) {
  const at = (iso) => {
    const ms = parseTime(iso);
    return ms === null ? iso : localTime(ms);
  };
  const i = inner(ps);
  switch (ps.status) {
    case 'locked':
      return `Locked until ${at(ps.lock_expires_at)}`;
    case 'pending_at':
      return parseTime(ps.scheduled_at) > now ? `Scheduled at ${at(ps.scheduled_at)}` : 'Pending';
    case 'blocked_by_join_set':
      return `Blocked by ${ps.join_set_id}${ps.closing ? ' (closing)' : ''}`;
    case 'paused':
      return i.kind === 'BlockedByJoinSet' ? `Paused (blocked by ${i.join_set_id})` : 'Paused';
    case 'cancelling':
      return `Cancelling (${i.kind === 'Locked' ? 'locked' : i.kind === 'BlockedByJoinSet' ? 'blocked' : 'pending'})`;
    case 'finished': {
      const b = bucketOf(ps);
      if (b === 'finished_ok') return 'Finished: OK';
      if (b === 'finished_error') return 'Finished: error';
      return `Finished: ${String(failureKind(ps) || 'failure').replace(/_/g, ' ')}`;
    }
  }
  return ps.status;
}

// badge renders a pending_state as a coloured label.
export function badge(ps) {
  const b = bucketOf(ps);
  return h('span', { class: ['state', 'state-' + b], title: JSON.stringify(ps), text: describe(ps) });
}
