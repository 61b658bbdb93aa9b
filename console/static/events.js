// Execution events and responses: their kinds, one-line summaries, and the
// join sets (children, delays, responses) they describe.

import { parseTime, duration, localTime } from './dom.js';

// payload returns [kind, body] of an ExecutionRequest ("paused" or {"locked": {…}}).
function payload(ev) {
  if (typeof ev === 'string') return [ev, null];
  const [k] = Object.keys(ev || {});
  return [k || 'unknown', ev ? ev[k] : null];
}

// kindOf returns the event's kind: created, locked, …, or for history events
// their type (join_next, join_set_request:delay_request, …).
export function kindOf(event) {
  const [k, body] = payload(event.event);
  if (k !== 'history_event') return k;
  const he = body.event || {};
  if (he.type === 'join_set_request') return 'join_set_request:' + (he.request && he.request.type);
  return he.type;
}

// CATEGORY maps a kind to the colour class of the timeline.
const CATEGORY = {
  created: 'create', locked: 'lock', unlocked: 'unlock', temporarily_failed: 'retry', temporarily_timed_out: 'retry',
  finished: 'finish', paused: 'pause', unpaused: 'pause', cancellation_requested: 'cancel', component_upgrade_finished: 'upgrade',
  join_next: 'wait', join_next_try: 'wait', join_next_too_many: 'wait', 'join_set_request:delay_request': 'sleep',
  'join_set_request:child_execution_request': 'child', join_set_create: 'history', persist: 'history', schedule: 'history', stub: 'history',
};
export const categoryOf = (kind) => CATEGORY[kind] || 'history';

export const historyEvent = (event) => {
  const [k, body] = payload(event.event);
  return k === 'history_event' ? body.event : null;
};

const at = (iso) => {
  const ms = parseTime(iso);
  return ms === null ? String(iso) : localTime(ms, true);
};
const retvalText = (rv) => {
  if (!rv) return '';
  if ('execution_failure' in rv) return 'execution failure: ' + (rv.execution_failure.kind || '') + (rv.execution_failure.reason ? ' — ' + rv.execution_failure.reason : '');
  if ('ok' in rv) return 'ok' + (rv.ok === null ? '' : ': ' + JSON.stringify(rv.ok.value));
  if ('err' in rv) return 'err' + (rv.err === null ? '' : ': ' + JSON.stringify(rv.err.value));
  return JSON.stringify(rv);
};
export const retvalSummary = retvalText;

// summary returns a one-line description of an event.
export function summary(event) {
  const [k, b] = payload(event.event);
  const created = parseTime(event.created_at);
  switch (k) {
    case 'created':
      return `${b.ffqn}(${JSON.stringify(b.params).slice(1, -1)})${b.parent ? ' — child of ' + b.parent[0] : ''}`;
    case 'locked': {
      const exp = parseTime(b.lock_expires_at);
      return `by ${b.executor_id} run ${b.run_id}, lease ${exp && created ? duration(exp - created) : '?'} (until ${at(b.lock_expires_at)})`;
    }
    case 'unlocked':
      return `${b.reason || ''}${b.backoff_expires_at ? ' — retry at ' + at(b.backoff_expires_at) : ''}`;
    case 'temporarily_failed':
      return `${b.reason || 'failed'}${b.detail ? ' (' + b.detail.split('\n')[0] + ')' : ''} — retry at ${at(b.backoff_expires_at)}`;
    case 'temporarily_timed_out':
      return `timed out — retry at ${at(b.backoff_expires_at)}`;
    case 'finished':
      return retvalText(b.retval);
    case 'component_upgrade_finished':
      return JSON.stringify(b);
    case 'history_event': {
      const he = b.event || {};
      switch (he.type) {
        case 'join_set_create':
          return `join set ${he.join_set_id}${he.closing_strategy ? ' (' + he.closing_strategy + ')' : ''}`;
        case 'join_set_request': {
          const r = he.request || {};
          if (r.type === 'delay_request') {
            const exp = parseTime(r.expires_at);
            return `${he.join_set_id}: sleep ${exp && created ? duration(exp - created) : ''} until ${at(r.expires_at)} (${r.delay_id})`;
          }
          return `${he.join_set_id}: ${r.target_ffqn}(${JSON.stringify(r.params || []).slice(1, -1)}) → ${r.child_execution_id}`;
        }
        case 'join_next':
          return `await ${he.join_set_id}${he.requested_ffqn ? ' (' + he.requested_ffqn + ')' : ''}${he.closing ? ', closing' : ''}`;
        case 'join_next_try':
          return `try ${he.join_set_id}: ${he.outcome ? JSON.stringify(he.outcome) : ''}`;
        case 'join_next_too_many':
          return `too many join_next on ${he.join_set_id}`;
        case 'persist':
          return `persist ${JSON.stringify(he.kind || he.value || '')}`;
        case 'schedule':
          return `schedule ${he.execution_id} ${JSON.stringify(he.schedule_at)}`;
        case 'stub':
          return `stub ${he.target_execution_id}`;
        default:
          return JSON.stringify(he);
      }
    }
  }
  return '';
}

// attempts numbers the runs of an execution that was retried: for each
// Locked event its attempt (1 + the temporary failures and timeouts before
// it) and the lock's max_retries (null: no limit), and for each
// temporarily_failed / temporarily_timed_out event the attempt that failed,
// which is also the number of the retry it leads to. A Map by version, empty
// when nothing was retried (a workflow's many locks are all attempt 1 then,
// not worth a label).
export function attempts(events) {
  const out = new Map();
  let failures = 0;
  let max;
  for (const e of events) {
    const k = kindOf(e);
    if (k === 'locked') {
      const rc = e.event.locked.retry_config;
      max = rc ? rc.max_retries : undefined;
      out.set(e.version, { attempt: failures + 1, max });
    } else if (k === 'temporarily_failed' || k === 'temporarily_timed_out') {
      failures++;
      out.set(e.version, { attempt: failures, failed: true, max });
    }
  }
  return failures ? out : new Map();
}

// attemptText labels an entry of attempts: "attempt 2", or for a failure
// "attempt 1 failed, retry 1 of 3" (max null: "retry 1, no limit").
export function attemptText(a) {
  if (!a.failed) return `attempt ${a.attempt}`;
  const of = a.max === null ? ', no limit' : a.max === undefined ? '' : ` of ${a.max}`;
  return `attempt ${a.attempt} failed, retry ${a.attempt}${of}`;
}

// responseInfo describes a ResponseWithCursor.
export function responseInfo(r) {
  const outer = r.event || {};
  const inner = outer.event || {};
  const ev = inner.event || {};
  return {
    cursor: r.cursor,
    createdAt: outer.created_at,
    joinSet: inner.join_set_id,
    type: ev.type,
    childId: ev.child_execution_id,
    delayId: ev.delay_id,
    result: ev.result,
    finishedVersion: ev.finished_version,
  };
}

// delayOutcome describes a delay_finished result ({"Ok":null} fired, {"Err":…} cancelled).
export function delayOutcome(result) {
  if (!result) return '';
  if ('Ok' in result) return 'fired';
  if ('Err' in result) return 'cancelled';
  return JSON.stringify(result);
}

// joinSets groups the requests and responses of an execution by join set:
// [{id, created (event), children: [{id, ffqn, params, version, at, response}], delays: [{id, expiresAt, version, at, response}], awaits}]
export function joinSets(events, responses) {
  const sets = new Map();
  const get = (id) => {
    if (!sets.has(id)) sets.set(id, { id, created: null, children: [], delays: [], awaits: 0 });
    return sets.get(id);
  };
  for (const e of events) {
    const he = historyEvent(e);
    if (!he) continue;
    if (he.type === 'join_set_create') get(he.join_set_id).created = e;
    else if (he.type === 'join_next') get(he.join_set_id).awaits++;
    else if (he.type === 'join_set_request') {
      const r = he.request || {};
      const s = get(he.join_set_id);
      if (r.type === 'delay_request') s.delays.push({ id: r.delay_id, expiresAt: r.expires_at, version: e.version, at: e.created_at, response: null });
      else s.children.push({ id: r.child_execution_id, ffqn: r.target_ffqn, params: r.params, version: e.version, at: e.created_at, response: null });
    }
  }
  for (const r of responses) {
    const info = responseInfo(r);
    const s = get(info.joinSet);
    const list = info.type === 'delay_finished' ? s.delays : s.children;
    const key = info.type === 'delay_finished' ? info.delayId : info.childId;
    const item = list.find((x) => x.id === key);
    if (item) item.response = info;
    else list.push({ id: key, response: info, orphan: true });
  }
  return [...sets.values()];
}

// parentOf returns the parent execution id of a derived id ("" for a top-level id).
export function parentOf(id) {
  const dot = id.lastIndexOf('.');
  return dot < 0 ? '' : id.slice(0, dot);
}

// ancestors returns the chain of parent ids, top-level first.
export function ancestors(id) {
  const out = [];
  for (let p = parentOf(id); p; p = parentOf(p)) out.unshift(p);
  return out;
}
