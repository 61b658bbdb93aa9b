// The event history drawn two ways: a time strip (what the execution was
// doing when: pending, running under a lock, retry back-off, waiting on a
// join set, paused; each delay and child as a bar of its own) and the table
// of events (version, time, kind, summary, payload on demand).

import { h, time, duration, parseTime, json, localTime } from './dom.js';
import { kindOf, categoryOf, summary, joinSets, responseInfo, attempts, attemptText } from './events.js';

const PHASE_LABEL = {
  scheduled: 'scheduled', pending: 'pending', running: 'running (locked)', retry: 'retry back-off', wait: 'waiting on a join set',
  paused: 'paused', cancelling: 'cancelling',
};

// phases walks the events (and responses, which end a wait) and returns
// [{phase, from, to, versions}] in ms.
export function phases(events, responses, endMs) {
  const points = events.map((e) => ({ t: parseTime(e.created_at), e }));
  for (const r of responses) points.push({ t: parseTime(responseInfo(r).createdAt), r });
  points.sort((a, b) => a.t - b.t || (a.e ? 0 : 1) - (b.e ? 0 : 1));
  const out = [];
  let cur = null;
  const start = (phase, t, v) => {
    if (cur && cur.phase === phase) return;
    if (cur) {
      cur.to = t;
      if (cur.to > cur.from || out.length === 0) out.push(cur);
    }
    cur = { phase, from: t, to: t, version: v };
  };
  for (const p of points) {
    if (p.r) {
      if (cur && cur.phase === 'wait') start('pending', p.t);
      continue;
    }
    const k = kindOf(p.e);
    const body = typeof p.e.event === 'object' ? p.e.event[Object.keys(p.e.event)[0]] : null;
    switch (k) {
      case 'created': {
        const sched = parseTime(body.scheduled_at);
        start(sched > p.t ? 'scheduled' : 'pending', p.t, p.e.version);
        if (sched > p.t && sched < endMs) {
          // Scheduled until scheduled_at, pending from then on (until the next event).
          cur.to = sched;
          out.push(cur);
          cur = { phase: 'pending', from: sched, to: sched };
        }
        break;
      }
      case 'locked': start('running', p.t, p.e.version); break;
      case 'unlocked': start('pending', p.t, p.e.version); break;
      case 'temporarily_failed': case 'temporarily_timed_out': start('retry', p.t, p.e.version); break;
      case 'join_next': start('wait', p.t, p.e.version); break;
      case 'paused': start('paused', p.t, p.e.version); break;
      case 'unpaused': start('pending', p.t, p.e.version); break;
      case 'cancellation_requested': start('cancelling', p.t, p.e.version); break;
      case 'finished':
        if (cur) {
          cur.to = p.t;
          out.push(cur);
          cur = null;
        }
        break;
      default: break;
    }
  }
  if (cur) {
    cur.to = Math.max(endMs, cur.from);
    out.push(cur);
  }
  return out;
}

// strip renders the time strip.
export function strip(events, responses, finished) {
  if (!events.length) return null;
  const t0 = parseTime(events[0].created_at);
  const last = parseTime(events[events.length - 1].created_at);
  let t1 = finished ? last : Math.max(Date.now(), last);
  const sets = joinSets(events, responses);
  for (const s of sets) {
    for (const d of s.delays) if (!finished && d.expiresAt) t1 = Math.max(t1, Math.min(parseTime(d.expiresAt), t1));
  }
  const span = Math.max(t1 - t0, 1);
  const pos = (el, from, to) => {
    const left = ((Math.max(from, t0) - t0) / span) * 100;
    const width = Math.max(((Math.min(to, t1) - Math.max(from, t0)) / span) * 100, 0.4);
    el.style.left = left.toFixed(3) + '%';
    el.style.width = Math.min(width, 100 - left).toFixed(3) + '%';
    return el;
  };
  const lane = (label, title, ...segs) => h('div', { class: 'lane' },
    h('div', { class: 'lane-label', title, text: label }), h('div', { class: 'track' }, segs));

  const tries = attempts(events);
  const execSegs = phases(events, responses, t1).map((p) => {
    const a = p.version !== undefined ? tries.get(p.version) : undefined;
    const label = a ? attemptText(a) : '';
    return pos(h('div', {
      class: ['seg', 'seg-' + p.phase], dataset: a ? { attempt: String(a.attempt) } : null,
      title: `${PHASE_LABEL[p.phase] || p.phase}${label ? ', ' + label : ''}: ${duration(p.to - p.from)} from ${localTime(p.from, true)}${p.version !== undefined ? ' (v' + p.version + ')' : ''}`,
    }, a ? h('span', { class: 'seg-label', text: a.failed ? `retry ${a.attempt}` : `#${a.attempt}` }) : null), p.from, p.to);
  });
  const marks = events.map((e) => {
    const t = parseTime(e.created_at);
    const m = h('div', { class: ['mark', 'cat-' + categoryOf(kindOf(e))], title: `v${e.version} ${kindOf(e)} at ${localTime(t, true)}` });
    m.style.left = (((t - t0) / span) * 100).toFixed(3) + '%';
    return m;
  });
  const lanes = [lane('execution', 'what the execution was doing', execSegs, marks)];

  const bars = [];
  for (const s of sets) {
    for (const c of s.children) {
      if (!c.at) continue;
      const from = parseTime(c.at);
      const to = c.response ? parseTime(c.response.createdAt) : t1;
      const res = c.response && c.response.result;
      const failed = res && !('ok' in res);
      bars.push(lane(c.id.slice(c.id.lastIndexOf('.') + 1), c.id,
        pos(h('div', { class: ['seg', 'seg-child', failed && 'seg-failed', !c.response && 'seg-open'],
          title: `child ${c.id} (${c.ffqn}): ${c.response ? 'answered after ' + duration(to - from) : 'running for ' + duration(to - from)}` }), from, to)));
    }
    for (const d of s.delays) {
      if (!d.at) continue;
      const from = parseTime(d.at);
      const exp = parseTime(d.expiresAt);
      const to = d.response ? parseTime(d.response.createdAt) : Math.min(exp, t1);
      const cancelled = d.response && d.response.result && 'Err' in d.response.result;
      bars.push(lane(d.id.slice(d.id.lastIndexOf('.') + 1), d.id,
        pos(h('div', { class: ['seg', 'seg-sleep', cancelled && 'seg-cancelled', !d.response && 'seg-open'],
          title: `delay ${d.id}: until ${localTime(exp, true)}${d.response ? (cancelled ? ', cancelled' : ', fired') + ' after ' + duration(to - from) : ', ' + duration(exp - Date.now()) + ' left'}` }), from, to)));
    }
  }
  const shown = bars.slice(0, 12);
  const legend = h('div', { class: 'legend' },
    ['scheduled', 'pending', 'running', 'retry', 'wait', 'paused', 'cancelling'].map((p) => h('span', { class: ['key', 'seg-' + p], text: PHASE_LABEL[p] })),
    h('span', { class: 'key seg-sleep', text: 'delay' }), h('span', { class: 'key seg-child', text: 'child' }));
  return h('figure', { class: 'gantt', 'aria-label': 'Time strip of the execution' },
    h('div', { class: 'axis' }, h('span', { text: localTime(t0, true) }), h('span', { class: 'muted', text: duration(t1 - t0) + (finished ? '' : ' so far') }), h('span', { text: localTime(t1, true) })),
    lanes, shown,
    bars.length > shown.length ? h('p', { class: 'muted', text: `${bars.length - shown.length} more children and delays are listed under Join sets.` }) : null,
    legend);
}

// eventRows renders events as table rows; onBacktrace(event) loads its
// backtrace; prev is the time (ms) of the event before the first one, if
// any; tries (attempts() of the whole history) labels locks and failures
// with their attempt.
export function eventRows(events, onBacktrace, prev = null, tries = new Map()) {
  return events.map((e) => {
    const a = tries.get(e.version);
    const t = parseTime(e.created_at);
    const delta = prev === null ? '' : '+' + duration(t - prev);
    prev = t;
    const k = kindOf(e);
    const cat = categoryOf(k);
    const details = h('details', { class: 'payload' }, h('summary', { text: 'payload' }));
    details.addEventListener('toggle', () => {
      if (details.open && details.children.length === 1) details.appendChild(json(e.event));
    }, { once: false });
    return h('tr', { class: 'event cat-' + cat, dataset: { version: String(e.version), kind: k } },
      h('td', { class: 'num', text: String(e.version) }),
      h('td', null, time(e.created_at, true), h('div', { class: 'muted small', text: delta })),
      h('td', null, h('span', { class: ['kind', 'cat-' + cat], text: k.replace('join_set_request:', '') }),
        a ? h('div', { class: ['attempt', a.failed && 'attempt-failed'], text: attemptText(a) }) : null),
      h('td', { class: 'summary' }, h('div', { class: 'summary-text', text: summary(e) }), details),
      h('td', null, e.backtrace_id !== undefined && e.backtrace_id !== null
        ? h('button', { type: 'button', class: 'small', onclick: () => onBacktrace(e) }, 'backtrace') : null));
  });
}
