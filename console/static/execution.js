// One execution: state, params, result, the event history (time strip and
// table), join sets with children and delays, responses, logs, backtraces
// with source, and the actions. A running execution is followed live: a
// long poll on GET /v1/executions/{id}?follow=true ends when it finishes,
// and the incremental reads (events after the last version, responses after
// the last cursor, logs after the last log cursor) run every 2 s meanwhile.

import { api, bytes, query, okMessage, ApiError } from './api.js';
import {
  h, replace, time, duration, parseTime, json, idText, execHref, copyButton, errorBox, empty, toast, confirm, dialog, shortDigest, plural,
  foldRows,
} from './dom.js';
import { badge, isFinished } from './states.js';
import { joinSets, ancestors, parentOf, responseInfo, retvalSummary, delayOutcome, attempts } from './events.js';
import { strip, eventRows } from './timeline.js';

const POLL_MS = 2000;
const PAGE = 100;
const MAX_EVENTS = 5000;
const ZERO_DEPLOYMENT = 'Dep_00000000000000000000000000';

export function executionPage(main, ctx, id) {
  const base = '/v1/executions/' + encodeURIComponent(id);
  const s = { st: null, events: [], responses: [], logs: [], children: [], childrenMore: false, truncated: false };
  const logOpts = { derived: false };
  // The long tables the reader unfolded (foldRows), kept across re-renders.
  const unfolded = new Set();

  const live = h('span', { class: 'live', hidden: true, text: '● following live' });
  const head = h('div', { class: 'page-head' });
  const actionsBox = h('div', { class: 'actions', role: 'toolbar', 'aria-label': 'Actions' });
  const actionErr = h('div', { class: 'action-error', 'aria-live': 'assertive' });
  const summaryBox = h('section', { class: 'card summary', 'aria-label': 'Summary' });
  const ioBox = h('div', { class: 'io' });
  const stripBox = h('section', { 'aria-labelledby': 'h-timeline' });
  const setsBox = h('section', { 'aria-labelledby': 'h-joinsets' });
  const eventsBody = h('tbody');
  const eventsBox = h('section', { 'aria-labelledby': 'h-events' },
    h('h2', { id: 'h-events', text: 'Events' }),
    h('table', { class: 'events', id: 'events' },
      h('thead', null, h('tr', null, ['Version', 'Time', 'Kind', 'Summary', ''].map((t) => h('th', { scope: 'col', text: t })))),
      eventsBody));
  const btBox = h('section', { id: 'backtrace', 'aria-labelledby': 'h-backtrace' });
  const respBox = h('section', { 'aria-labelledby': 'h-responses' });
  const logsBody = h('tbody');
  const logsNote = h('p', { class: 'muted' });
  const logsDerived = h('input', { type: 'checkbox', id: 'logs-derived' });
  const logsBox = h('section', { 'aria-labelledby': 'h-logs' },
    h('div', { class: 'section-head' }, h('h2', { id: 'h-logs', text: 'Logs and streams' }),
      h('label', { for: 'logs-derived', class: 'check' }, logsDerived, ' include child executions')),
    h('table', { class: 'logs', id: 'logs' },
      h('thead', null, h('tr', null, ['Time', 'Execution', 'Level', 'Message'].map((t) => h('th', { scope: 'col', text: t })))),
      logsBody),
    logsNote);
  logsDerived.addEventListener('change', () => {
    logOpts.derived = logsDerived.checked;
    s.logs = [];
    logsBody.replaceChildren();
    loadLogs().catch(showLoadError);
  });

  replace(main, head, h('p', { class: 'loading', text: 'Loading execution…' }));

  // --- loading --------------------------------------------------------------------

  async function loadStatus() {
    s.st = await api('GET', base + '/status', { signal: ctx.signal });
  }

  async function loadEvents() {
    for (;;) {
      const last = s.events.length ? s.events[s.events.length - 1].version : 0;
      const page = await api('GET', base + '/events' + query({
        version: last, including_cursor: s.events.length ? '' : 'true', length: PAGE, include_backtrace_id: 'true',
      }), { signal: ctx.signal });
      s.events.push(...page.events);
      if (page.events.length < PAGE) return;
      if (s.events.length >= MAX_EVENTS) {
        s.truncated = true;
        return;
      }
    }
  }

  async function loadResponses() {
    for (;;) {
      const last = s.responses.length ? s.responses[s.responses.length - 1].cursor : 0;
      const page = await api('GET', base + '/responses' + query({ cursor: last || '', length: PAGE }), { signal: ctx.signal });
      s.responses.push(...page.responses);
      if (page.responses.length < PAGE) return;
    }
  }

  async function loadLogs() {
    const before = s.logs.length;
    for (let i = 0; i < 10; i++) {
      const last = s.logs.length ? s.logs[s.logs.length - 1].cursor : '';
      const page = await api('GET', base + '/logs' + query({ cursor: last, length: PAGE, show_derived: logOpts.derived ? 'true' : '' }), { signal: ctx.signal });
      s.logs.push(...page);
      if (page.length < PAGE) break;
    }
    renderLogs(before);
  }

  async function loadChildren() {
    const list = await api('GET', '/v1/executions' + query({ show_derived: 'true', execution_id_prefix: id + '.', length: PAGE }), { signal: ctx.signal });
    s.children = list;
    s.childrenMore = list.length === PAGE;
  }

  // --- rendering ------------------------------------------------------------------

  const created = () => (s.events.length && s.events[0].event.created) || null;
  const finishedEvent = () => {
    const e = s.events.find((x) => x.event && x.event.finished);
    return e ? e.event.finished : null;
  };
  const isStub = () => s.st && s.st.component_type === 'activity_stub';

  function renderHead() {
    const crumbs = [h('a', { href: '/console/', text: 'Executions' })];
    for (const a of ancestors(id)) crumbs.push(h('span', { class: 'sep', text: '›' }), h('a', { href: execHref(a), class: 'mono', text: a.slice(a.lastIndexOf('.') + 1), title: a }));
    replace(head,
      h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, crumbs),
      h('div', { class: 'title-row' },
        h('h1', { class: 'ffqn', text: s.st ? s.st.ffqn : id }),
        s.st ? badge(s.st.pending_state) : null, live),
      h('div', { class: 'subtitle' }, idText(id)));
  }

  // whyNot says why an action cannot apply to the execution as it is now
  // ('' when it can): the server would refuse it (docs/http-api.md §3.4).
  function whyNot(action) {
    const ps = s.st.pending_state;
    const type = s.st.component_type;
    const activity = type === 'activity' || type === 'activity_stub';
    if (isFinished(ps)) return 'it finished';
    const cancelling = ps.status === 'cancelling';
    switch (action) {
      case 'pause':
        if (cancelling) return 'it is being cancelled';
        if (ps.status === 'locked' && activity) return 'a running activity cannot be paused (cancel it instead)';
        return '';
      case 'cancel':
        if (cancelling) return 'its cancellation was already requested';
        if (type === 'workflow' && !s.st.ffqn.endsWith('-cancellable')) return 'only -cancellable workflows can be cancelled';
        if (!activity && type !== 'workflow') return `a ${type} cannot be cancelled`;
        return '';
      default:
        return '';
    }
  }

  function renderActions() {
    const ps = s.st.pending_state;
    const paused = ps.status === 'paused';
    const notes = [];
    // action renders an action's button, disabled (with the reason beside it) when it cannot apply.
    const action = (name, attrs, label) => {
      const why = whyNot(name);
      if (why) notes.push(`${label} does not apply: ${why}`);
      return h('button', { type: 'button', id: 'act-' + name, ...attrs, disabled: !!why, title: why ? `Cannot ${name}: ${why}` : null,
        'aria-describedby': why ? 'actions-note' : null }, label);
    };
    const buttons = [
      paused
        ? action('unpause', { onclick: () => act('Unpause', 'PUT', base + '/unpause', `Unpause ${id}? Workers can lock it again.`) }, 'Unpause')
        : action('pause', { onclick: () => act('Pause', 'PUT', base + '/pause', `Pause ${id}? Workers will not lock it until it is unpaused.`) }, 'Pause'),
      action('cancel', { class: 'danger', onclick: () => act('Cancel', 'PUT', base + '/cancel', `Request cancellation of ${id}? Only activities and -cancellable workflows can be cancelled.`, true) }, 'Cancel'),
      isStub() && !isFinished(ps) ? h('button', { type: 'button', id: 'act-stub', onclick: () => stub(id) }, 'Stub…') : null,
      h('a', { class: 'button', href: '/console/submit' + query({ ffqn: s.st.ffqn, params: created() ? JSON.stringify(created().params) : '' }) }, 'Submit again…'),
      isFinished(ps) ? null : h('button', { type: 'button', id: 'act-upgrade', onclick: () => upgrade(), title: 'Move it to another build after a replay check by a worker of that build' }, 'Upgrade…'),
      h('button', { type: 'button', id: 'act-history', onclick: () => downloadHistory(), title: 'The stela-history/1 file of `stela execution history export`, for workertest.ReplayFile' }, 'Download history'),
      h('button', { type: 'button', title: 'Refresh (r)', 'aria-keyshortcuts': 'r', onclick: () => reload().catch(showLoadError) }, 'Refresh'),
    ];
    const note = isFinished(ps) ? 'Finished: pausing and cancelling no longer apply.' : notes.join('; ');
    replace(actionsBox, buttons, note ? h('span', { id: 'actions-note', class: 'muted small', text: note }) : null);
  }

  function renderSummary() {
    const c = created();
    const st = s.st;
    const ps = st.pending_state;
    const dl = [];
    const row = (k, ...v) => dl.push(h('dt', { text: k }), h('dd', null, v));
    row('State', badge(ps));
    row('Component', `${st.component_type}${c && c.component_id.name ? ' ' + c.component_id.name : ''} `,
      h('span', { class: 'mono', title: st.component_digest, text: shortDigest(st.component_digest) }), copyButton(st.component_digest, 'digest'));
    row('Deployment', st.deployment_id === ZERO_DEPLOYMENT ? h('span', { class: 'muted', text: 'none (unmanaged)' })
      : idText(st.deployment_id, '/console/deployments/' + encodeURIComponent(st.deployment_id)));
    row('Created', time(st.created_at, true));
    row('First scheduled', time(st.first_scheduled_at, true));
    if (ps.status === 'finished') row('Finished', time(ps.finished_at, true), ` (v${ps.version}, after ${duration(parseTime(ps.finished_at) - parseTime(st.created_at))})`);
    if (ps.status === 'locked') row('Lock expires', time(ps.lock_expires_at, true), ` — ${ps.locked_by.executor_id}`);
    if (ps.status === 'pending_at' && ps.last_lock) row('Last lock', `${ps.last_lock.executor_id} / ${ps.last_lock.run_id}`);
    const parent = parentOf(id);
    if (parent) row('Parent', idText(parent, execHref(parent)));
    if (c && c.scheduled_by) row('Scheduled by', idText(c.scheduled_by, execHref(c.scheduled_by)));
    if (c && c.metadata && Object.keys(c.metadata).length) row('Metadata', json(c.metadata, 'small'));
    row('Events', String(s.events.length) + (s.truncated ? '+ (only the first shown)' : ''));
    replace(summaryBox, h('dl', null, dl));
  }

  function renderIO() {
    const c = created();
    const f = finishedEvent();
    const ps = s.st.pending_state;
    let result;
    if (f) {
      const rv = f.retval;
      const bad = !('ok' in rv);
      result = h('div', { class: ['result', bad ? 'result-bad' : 'result-ok'] },
        h('p', { class: 'result-kind', text: bad ? ('execution_failure' in rv ? 'Execution failure' : 'Error') : 'OK' }), json(rv));
    } else {
      result = empty(isFinished(ps) ? 'Finished (result not loaded).' : 'Not finished yet.');
    }
    replace(ioBox,
      h('section', { class: 'card', 'aria-labelledby': 'h-params' }, h('h2', { id: 'h-params', text: 'Params' }), c ? json(c.params) : empty('—')),
      h('section', { class: 'card', 'aria-labelledby': 'h-result' }, h('h2', { id: 'h-result', text: 'Result' }), result));
  }

  function renderStrip() {
    replace(stripBox, h('h2', { id: 'h-timeline', text: 'Timeline' }), strip(s.events, s.responses, isFinished(s.st.pending_state)) || empty('No events.'));
  }

  let renderedVersion = -1;
  let prevTime = null;
  let renderedRetried = false;
  function renderEvents() {
    const tries = attempts(s.events);
    if ((tries.size > 0) !== renderedRetried) {
      // The first retry: the locks shown so far get their attempt numbers too.
      renderedRetried = tries.size > 0;
      eventsBody.replaceChildren();
      renderedVersion = -1;
      prevTime = null;
    }
    const fresh = s.events.filter((e) => e.version > renderedVersion);
    if (!fresh.length) return;
    const rows = eventRows(fresh, showBacktrace, prevTime, tries);
    eventsBody.append(...rows);
    renderedVersion = fresh[fresh.length - 1].version;
    prevTime = parseTime(fresh[fresh.length - 1].created_at);
    foldRows(eventsBody, { key: 'events', unfolded, head: 10, tail: 10, what: 'events' });
  }

  function childState(cid) {
    const x = s.children.find((c) => c.execution_id === cid);
    return x || null;
  }

  function renderSets() {
    const sets = joinSets(s.events, s.responses);
    if (!sets.length) {
      replace(setsBox, h('h2', { id: 'h-joinsets', text: 'Join sets' }), empty('No join sets: this execution started no children and no delays.'));
      return;
    }
    const now = Date.now();
    const blocks = sets.map((js) => {
      const rows = [];
      for (const c of js.children) {
        const x = childState(c.id);
        const res = c.response && c.response.result;
        rows.push(h('tr', { class: 'child', dataset: { child: c.id } },
          h('td', null, h('span', { class: 'kind cat-child', text: 'child' })),
          h('td', null, idText(c.id, execHref(c.id))),
          h('td', { class: 'ffqn', text: c.ffqn || (x && x.ffqn) || '' }),
          h('td', null, x ? badge(x.pending_state) : c.response ? h('span', { class: 'muted', text: 'finished' }) : h('span', { class: 'muted', text: '—' })),
          h('td', null, c.response ? [h('span', { class: 'small' }, 'response ', time(c.response.createdAt, true)),
            c.at ? h('span', { class: 'muted small', text: ` after ${duration(parseTime(c.response.createdAt) - parseTime(c.at))}` }) : null,
            h('div', { class: 'mono small', text: retvalSummary(res) })]
            : h('span', { class: 'muted', text: 'no response yet' })),
          h('td', null, x && x.component_type === 'activity_stub' && !isFinished(x.pending_state)
            ? h('button', { type: 'button', class: 'small', dataset: { action: 'stub' }, onclick: () => stub(c.id) }, 'Stub…') : null)));
      }
      for (const d of js.delays) {
        const exp = parseTime(d.expiresAt);
        const pending = !d.response;
        const delayAct = (label, verb, danger) => h('button', {
          type: 'button', class: ['small', danger && 'danger'], dataset: { delayAction: verb },
          onclick: () => act(`${label} delay`, 'PUT', '/v1/delays/' + encodeURIComponent(d.id) + '/' + verb, `${label} delay ${d.id}?`, danger),
        }, label);
        rows.push(h('tr', { class: 'delay', dataset: { delay: d.id } },
          h('td', null, h('span', { class: 'kind cat-sleep', text: 'delay' })),
          h('td', null, idText(d.id)),
          h('td', null, exp ? ['until ', time(d.expiresAt, true)] : '—'),
          h('td', null, pending
            ? h('span', { class: 'time-left', dataset: { expires: String(exp) }, text: timeLeft(exp, now) })
            : null),
          h('td', null, d.response ? h('span', { class: 'small' }, delayOutcome(d.response.result) + ' ', time(d.response.createdAt, true)) : h('span', { class: 'muted', text: 'no response yet' })),
          h('td', { class: 'row-actions' }, pending ? [delayAct('Pause', 'pause'), delayAct('Unpause', 'unpause'), delayAct('Cancel', 'cancel', true)] : null)));
      }
      const body = h('tbody', null, rows);
      const what = !js.delays.length ? 'children' : !js.children.length ? 'delays' : 'children and delays';
      foldRows(body, { key: 'joinset:' + js.id, unfolded, head: 10, tail: 5, what });
      return h('div', { class: 'joinset card', dataset: { joinSet: js.id } },
        h('h3', null, h('span', { class: 'mono', text: js.id }), h('span', { class: 'muted small', text: ` — ${plural(js.children.length, 'child', 'children')}, ${plural(js.delays.length, 'delay', 'delays')}, awaited ${plural(js.awaits, 'time', 'times')}` })),
        rows.length ? h('table', { class: 'members' }, body) : empty('No requests.'));
    });
    replace(setsBox, h('h2', { id: 'h-joinsets', text: 'Join sets' }), blocks,
      s.childrenMore ? h('p', { class: 'muted', text: `Showing the states of the first ${PAGE} descendants.` }) : null);
  }

  function renderResponses() {
    if (!s.responses.length) {
      replace(respBox, h('h2', { id: 'h-responses', text: 'Responses' }), empty('No responses.'));
      return;
    }
    const rows = s.responses.map((r) => {
      const i = responseInfo(r);
      const details = h('details', { class: 'payload' }, h('summary', { text: 'payload' }));
      details.addEventListener('toggle', () => {
        if (details.open && details.children.length === 1) details.appendChild(json(r.event));
      });
      return h('tr', null,
        h('td', { class: 'num', text: String(i.cursor) }),
        h('td', null, time(i.createdAt, true)),
        h('td', { class: 'mono', text: i.joinSet }),
        h('td', null, h('span', { class: ['kind', i.type === 'delay_finished' ? 'cat-sleep' : 'cat-child'], text: i.type })),
        h('td', null, i.childId ? idText(i.childId, execHref(i.childId)) : idText(i.delayId || '')),
        h('td', { class: 'summary' }, h('div', { class: 'summary-text', text: i.type === 'delay_finished' ? delayOutcome(i.result) : retvalSummary(i.result) }), details));
    });
    const body = h('tbody', null, rows);
    foldRows(body, { key: 'responses', unfolded, head: 10, tail: 10, what: 'responses' });
    replace(respBox, h('h2', { id: 'h-responses', text: 'Responses' }),
      h('table', { class: 'responses', id: 'responses' },
        h('thead', null, h('tr', null, ['Cursor', 'Time', 'Join set', 'Type', 'From', 'Result'].map((t) => h('th', { scope: 'col', text: t })))),
        body));
  }

  function renderLogs(from) {
    const dec = new TextDecoder('utf-8');
    for (const l of s.logs.slice(from)) {
      let level;
      let text;
      if (l.type === 'stream') {
        level = h('span', { class: ['level', 'level-' + l.stream_type], text: l.stream_type });
        try {
          text = dec.decode(Uint8Array.from(atob(l.payload || ''), (ch) => ch.charCodeAt(0)));
        } catch {
          text = l.payload;
        }
      } else {
        level = h('span', { class: ['level', 'level-' + l.level], text: l.level });
        text = l.message;
      }
      logsBody.appendChild(h('tr', { title: 'run ' + l.run_id },
        h('td', null, time(l.created_at, true)),
        h('td', null, l.execution_id === id ? h('span', { class: 'muted', text: 'this' }) : h('a', { href: execHref(l.execution_id), class: 'mono small', text: l.execution_id.slice(l.execution_id.lastIndexOf('.') + 1) || l.execution_id })),
        h('td', null, level),
        h('td', null, h('pre', { class: 'log-text', text }))));
    }
    foldRows(logsBody, { key: 'logs', unfolded, head: 10, tail: 20, what: 'log entries' });
    logsNote.textContent = s.logs.length ? `${s.logs.length} entries` : 'No logs or stream output.';
  }

  function renderAll() {
    renderHead();
    renderActions();
    renderSummary();
    renderIO();
    renderStrip();
    renderSets();
    renderEvents();
    renderResponses();
  }

  // --- backtraces -----------------------------------------------------------------

  async function showBacktrace(e) {
    replace(btBox, h('h2', { id: 'h-backtrace', text: `Backtrace of version ${e.version}` }), h('p', { class: 'loading', text: 'Loading backtrace…' }));
    btBox.scrollIntoView({ block: 'nearest' });
    try {
      const bt = await api('GET', base + '/backtrace' + query({ version: e.version }), { signal: ctx.signal });
      const frames = (bt.wasm_backtrace && bt.wasm_backtrace.frames) || [];
      const srcBox = h('div', { class: 'source' });
      const list = h('ol', { class: 'frames' }, frames.map((f) => h('li', null,
        h('div', null, h('span', { class: 'mono', text: f.func_name }), h('span', { class: 'muted small', text: ' in ' + f.module })),
        (f.symbols || []).map((sym) => h('div', { class: 'symbol' },
          h('span', { class: 'mono small', text: `${sym.func_name || '?'} at ${sym.file || '?'}${sym.line ? ':' + sym.line : ''}${sym.col ? ':' + sym.col : ''}` }),
          sym.file ? h('button', { type: 'button', class: 'small', onclick: () => showSource(srcBox, e.version, sym.file, sym.line) }, 'source') : null)))));
      replace(btBox, h('h2', { id: 'h-backtrace', text: `Backtrace of versions ${bt.version_min_including}–${bt.version_max_excluding - 1}` }),
        frames.length ? list : empty('No frames.'), srcBox);
    } catch (err) {
      if (err.name !== 'AbortError') replace(btBox, h('h2', { id: 'h-backtrace', text: 'Backtrace' }), errorBox(err, 'Could not load the backtrace'));
    }
  }

  async function showSource(box, version, file, line) {
    replace(box, h('p', { class: 'loading', text: 'Loading ' + file + '…' }));
    try {
      const src = await api('GET', base + '/backtrace/source' + query({ file, version }), { signal: ctx.signal, text: true });
      const lines = String(src).split('\n');
      const from = line ? Math.max(1, line - 8) : 1;
      const to = line ? Math.min(lines.length, line + 8) : Math.min(lines.length, 200);
      const rows = [];
      for (let n = from; n <= to; n++) {
        rows.push(h('div', { class: ['src-line', n === line && 'src-hit'] }, h('span', { class: 'src-n', text: String(n) }), h('span', { text: lines[n - 1] })));
      }
      replace(box, h('h3', { class: 'mono', text: file + (line ? ':' + line : '') }), h('pre', { class: 'src' }, rows));
    } catch (err) {
      if (err.name !== 'AbortError') replace(box, errorBox(err, 'No source for ' + file));
    }
  }

  // --- actions --------------------------------------------------------------------

  function showActionError(err, what) {
    replace(actionErr, errorBox(err, what + ' failed'));
  }

  async function act(label, method, path, question, danger) {
    if (!(await confirm(label, question, label, danger))) return;
    replace(actionErr);
    try {
      const r = await api(method, path, { signal: ctx.signal });
      toast(`${label}: ${okMessage(r)}`);
      await reload();
    } catch (err) {
      if (err.name !== 'AbortError') showActionError(err, label);
    }
  }

  // downloadHistory saves GET …/history (the file `stela execution history
  // export` writes) as <id>.json.
  async function downloadHistory() {
    replace(actionErr);
    try {
      const b = await bytes(base + '/history', { signal: ctx.signal });
      const url = URL.createObjectURL(new Blob([b], { type: 'application/json' }));
      const a = h('a', { href: url, download: id + '.json', hidden: true });
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
      toast('History downloaded: ' + id + '.json');
    } catch (err) {
      if (err.name !== 'AbortError') showActionError(err, 'Download history');
    }
  }

  // upgradeTargets lists the digests of the deployments' components that
  // export this execution's function, other than its own, newest first.
  async function upgradeTargets() {
    const deps = await api('GET', '/v1/deployments' + query({ length: 20 }), { signal: ctx.signal });
    const seen = new Map();
    for (const d of deps) {
      const comps = await api('GET', '/v1/components' + query({ deployment_id: d.deployment_id, ffqn: s.st.ffqn }), { signal: ctx.signal });
      for (const c of comps) {
        const dg = c.component_id.component_digest;
        if (dg === s.st.component_digest || seen.has(dg)) continue;
        seen.set(dg, { digest: dg, name: c.component_id.name, deployment: d });
      }
    }
    return [...seen.values()];
  }

  // upgrade asks for a target digest and sends PUT …/upgrade without
  // skip_determinism_check: a worker of that digest replays the history
  // first (docs/http-api.md §3.9a). The outcome is shown: upgraded, the
  // replay's first divergence, or no worker of the digest.
  async function upgrade() {
    replace(actionErr);
    let targets;
    try {
      targets = await upgradeTargets();
    } catch (err) {
      if (err.name !== 'AbortError') showActionError(err, 'Upgrade');
      return;
    }
    if (!targets.length) {
      replace(actionErr, errorBox(new Error(`no other deployment has a component exporting ${s.st.ffqn}: start a worker of the new build first`), 'Upgrade'));
      return;
    }
    const sel = h('select', { id: 'upgrade-target' }, targets.map((x) => h('option', { value: x.digest,
      text: `${shortDigest(x.digest)} ${x.name} — ${x.deployment.description || x.deployment.deployment_id} (${x.deployment.status})` })));
    const v = await dialog({
      title: 'Upgrade ' + id,
      body: [h('p', { text: `A worker of the chosen build replays this execution's history against its code and moves it from ${shortDigest(s.st.component_digest)} only if it replays cleanly.` }),
        h('label', { for: 'upgrade-target', text: 'Target component digest' }), sel],
      buttons: [{ label: 'Cancel', value: null }, { label: 'Upgrade', value: 'ok', class: 'primary' }],
    });
    if (!v) return;
    const target = sel.value;
    const box = h('div', { class: 'upgrade-outcome', id: 'upgrade-outcome', role: 'status' }, `Replaying on a worker of ${shortDigest(target)}…`);
    replace(actionErr, box);
    try {
      await api('PUT', base + '/upgrade', { body: { old: s.st.component_digest, new: target, skip_determinism_check: false }, signal: ctx.signal });
      replace(box, h('strong', { text: 'Upgraded: ' }), `the history replayed cleanly; it now runs on ${shortDigest(target)}.`);
      box.dataset.outcome = 'upgraded';
      await reload();
    } catch (err) {
      if (err.name === 'AbortError') return;
      const kind = err.status === 422 ? 'diverged' : err.status === 404 && String(err.message).startsWith('new component not found') ? 'no-worker' : 'error';
      const what = { diverged: 'Replay failed — it stays on its build', 'no-worker': 'No worker of that build took the replay check' }[kind] || 'Upgrade failed';
      replace(box, errorBox(err, what));
      box.dataset.outcome = kind;
    }
  }

  async function stub(target) {
    const ta = h('textarea', { id: 'stub-value', rows: 5, cols: 60, value: '{"ok": null}' });
    const v = await dialog({
      title: 'Stub ' + target,
      body: [h('p', { text: 'The return value to store (a storage ReturnValue): {"ok": {"type": "string", "value": "x"}}, {"ok": null}, {"err": …} or {"execution_failure": {"kind": "…"}}.' }),
        h('label', { for: 'stub-value', text: 'Return value (JSON)' }), ta],
      buttons: [{ label: 'Cancel', value: null }, { label: 'Stub', value: 'ok', class: 'primary' }],
      validate: () => {
        try {
          JSON.parse(ta.value);
          return '';
        } catch (e) {
          return 'Not JSON: ' + e.message;
        }
      },
    });
    if (!v) return;
    replace(actionErr);
    try {
      const r = await api('PUT', '/v1/executions/' + encodeURIComponent(target) + '/stub', { body: JSON.parse(ta.value), signal: ctx.signal });
      toast(`Stub: ${okMessage(r)}`);
      await reload();
    } catch (err) {
      if (err.name !== 'AbortError') showActionError(err, 'Stub');
    }
  }

  // --- life cycle -----------------------------------------------------------------

  function showLoadError(err) {
    if (err.name === 'AbortError') return;
    replace(actionErr, errorBox(err, 'Refresh failed'));
  }

  async function incremental() {
    const before = { n: s.events.length, r: s.responses.length, st: JSON.stringify(s.st) };
    await Promise.all([loadStatus(), loadEvents(), loadResponses(), loadLogs(), s.events.length ? loadChildren() : null]);
    if (s.events.length !== before.n || s.responses.length !== before.r || JSON.stringify(s.st) !== before.st) renderAll();
    else renderStrip();
  }

  async function reload() {
    s.events = [];
    s.responses = [];
    s.logs = [];
    renderedVersion = -1;
    prevTime = null;
    renderedRetried = false;
    eventsBody.replaceChildren();
    logsBody.replaceChildren();
    await Promise.all([loadStatus(), loadEvents(), loadResponses(), loadLogs(), loadChildren()]);
    renderAll();
    startFollowing();
  }

  let following = false;
  let pollTimer = null;
  function startFollowing() {
    if (following || isFinished(s.st.pending_state) || ctx.signal.aborted) return;
    following = true;
    live.hidden = false;
    const tick = async () => {
      if (ctx.signal.aborted) return;
      try {
        if (!document.hidden) await incremental();
      } catch (err) {
        showLoadError(err);
      }
      if (isFinished(s.st.pending_state)) stopFollowing();
      else pollTimer = setTimeout(tick, POLL_MS);
    };
    pollTimer = setTimeout(tick, POLL_MS);
    // The long poll answers as soon as the execution finishes.
    (async () => {
      while (following && !ctx.signal.aborted) {
        try {
          await api('GET', base + query({ follow: 'true' }), { signal: ctx.signal });
          await incremental();
          stopFollowing();
          return;
        } catch (err) {
          if (err.name === 'AbortError') return;
          if (!(err instanceof ApiError) || err.status !== 425) await new Promise((r) => setTimeout(r, POLL_MS));
        }
      }
    })();
  }
  function stopFollowing() {
    following = false;
    live.hidden = true;
    clearTimeout(pollTimer);
  }
  ctx.signal.addEventListener('abort', stopFollowing);

  // Countdowns of pending delays.
  const countdown = setInterval(() => {
    const now = Date.now();
    for (const el of main.querySelectorAll('.time-left')) el.textContent = timeLeft(Number(el.dataset.expires), now);
  }, 1000);
  ctx.signal.addEventListener('abort', () => clearInterval(countdown));

  (async () => {
    try {
      await Promise.all([loadStatus(), loadEvents(), loadResponses(), loadChildren()]);
    } catch (err) {
      if (err.name === 'AbortError') return;
      replace(main, head, errorBox(err, err.status === 404 ? 'No such execution' : 'Could not load the execution'), h('p', null, h('a', { href: '/console/', text: '← Executions' })));
      renderHead();
      return;
    }
    replace(main, head, actionsBox, actionErr, summaryBox, ioBox, stripBox, setsBox, eventsBox, btBox, respBox, logsBox);
    renderAll();
    loadLogs().catch(showLoadError);
    startFollowing();
    ctx.keys({ r: () => reload().catch(showLoadError) });
  })();
}

function timeLeft(exp, now) {
  if (!exp) return '';
  const left = exp - now;
  return left > 0 ? duration(left) + ' left' : 'due (waiting for the timer sweep)';
}
