// The executions list: filters, counts per state, paging, live refresh.
// URL: /console/?ffqn=<prefix>&id=<prefix>&state=<bucket>&derived=1&cursor=<created_at>&cursor_id=<execution id>&dir=older|newer
// (created_at + id: the position of one row, so a page boundary inside a group of executions
// created at the same instant neither skips nor repeats any of them)

import { api, query } from './api.js';
import { h, replace, time, idText, execHref, errorBox, empty, localTime } from './dom.js';
import { BUCKETS, STATE_FILTERS, badge } from './states.js';

const PAGE = 50;
const REFRESH_MS = 3000;

export function listPage(main, ctx) {
  const p = ctx.params;
  const filters = {
    ffqn: p.get('ffqn') || '',
    id: p.get('id') || '',
    state: p.get('state') || '',
    derived: p.get('derived') === '1',
    dep: p.get('deployment') || '',
  };
  const cursor = p.get('cursor') || '';
  const cursorID = cursor ? p.get('cursor_id') || '' : '';
  const dir = p.get('dir') === 'newer' ? 'newer' : 'older';

  const urlFor = (f, extra) => '/console/' + query({
    ffqn: f.ffqn, id: f.id, state: f.state, derived: f.derived ? '1' : '', deployment: f.dep, ...extra,
  });

  // --- filter form ---
  const ffqnIn = h('input', { type: 'search', id: 'f-ffqn', name: 'ffqn', value: filters.ffqn, placeholder: 'ns:pkg/ifc.fn prefix  ( / )', size: 34, 'aria-keyshortcuts': '/' });
  const idIn = h('input', { type: 'search', id: 'f-id', name: 'id', value: filters.id, placeholder: 'E_… prefix', size: 24 });
  const stateSel = h('select', { id: 'f-state', name: 'state' },
    h('option', { value: '', text: 'Any state' }),
    STATE_FILTERS.map(([v, label]) => h('option', { value: v, text: label, selected: v === filters.state })));
  const derivedIn = h('input', { type: 'checkbox', id: 'f-derived', name: 'derived', checked: filters.derived });
  const liveIn = h('input', { type: 'checkbox', id: 'f-live', checked: localStorage.getItem('stela.live') !== '0' });
  const form = h('form', { class: 'filters', role: 'search', onsubmit: (e) => {
    e.preventDefault();
    ctx.navigate(urlFor({ ffqn: ffqnIn.value.trim(), id: idIn.value.trim(), state: stateSel.value, derived: derivedIn.checked, dep: filters.dep }));
  } },
    h('label', { for: 'f-ffqn' }, 'Function ', ffqnIn),
    h('label', { for: 'f-id' }, 'Execution id ', idIn),
    h('label', { for: 'f-state' }, 'State ', stateSel),
    h('label', { for: 'f-derived', class: 'check' }, derivedIn, ' Include child executions'),
    filters.dep ? h('span', { class: 'chip' }, 'Deployment ', h('span', { class: 'mono', text: filters.dep }), ' ',
      h('a', { href: urlFor({ ...filters, dep: '' }), 'aria-label': 'Remove the deployment filter', text: '×' })) : null,
    h('button', { type: 'submit', class: 'primary' }, 'Apply'),
    h('a', { href: '/console/', class: 'button' }, 'Reset'));
  stateSel.addEventListener('change', () => form.requestSubmit());
  derivedIn.addEventListener('change', () => form.requestSubmit());

  const countsBox = h('div', { class: 'counts', 'aria-label': 'Executions per state' });
  const tableBox = h('div', { class: 'table-box' }, h('p', { class: 'loading', text: 'Loading executions…' }));
  const pager = h('div', { class: 'pager' });
  const updated = h('span', { class: 'muted updated' });
  liveIn.addEventListener('change', () => {
    localStorage.setItem('stela.live', liveIn.checked ? '1' : '0');
    if (liveIn.checked) refresh();
  });

  replace(main,
    h('div', { class: 'page-head' },
      h('h1', { text: 'Executions' }),
      h('div', { class: 'head-actions' },
        h('label', { for: 'f-live', class: 'check', title: `Refresh every ${REFRESH_MS / 1000} s` }, liveIn, ' Live'), updated,
        h('a', { href: '/console/submit', class: 'button primary' }, 'Submit execution'))),
    form, countsBox, tableBox, pager);

  const listQuery = () => ({
    ffqn_prefix: filters.ffqn, execution_id_prefix: filters.id, show_derived: filters.derived ? 'true' : '',
    state: filters.state, deployment_id: filters.dep,
  });

  function renderCounts(c) {
    const items = BUCKETS.map(([b, label]) => {
      const n = c.counts[b] || 0;
      const active = filters.state === b;
      return h('a', {
        class: ['count', 'state-' + b, active && 'active', n === 0 && 'zero'],
        href: urlFor({ ...filters, state: active ? '' : b }),
        title: active ? 'Show every state' : `Show only ${label.toLowerCase()}`,
        'aria-current': active ? 'true' : null,
        dataset: { bucket: b, count: String(n) },
      }, h('span', { class: 'count-n', text: String(n) + (c.complete ? '' : '+') }), ' ', h('span', { text: label }));
    });
    replace(countsBox,
      h('span', { class: 'muted', text: c.complete ? `${c.total} total` : `in the newest ${c.total}` }),
      items);
  }

  function stateCell(x) {
    return badge(x.pending_state);
  }

  function renderTable(list) {
    if (!list.length) {
      replace(tableBox, empty(cursor ? 'No more executions on this side.' :
        (filters.ffqn || filters.id || filters.state || filters.dep ? 'No execution matches these filters.' : 'No executions yet. Submit one, or start a worker.')));
      return;
    }
    const rows = list.map((x) => h('tr', { dataset: { id: x.execution_id } },
      h('td', null, idText(x.execution_id, execHref(x.execution_id))),
      h('td', { class: 'ffqn', text: x.ffqn }),
      h('td', null, stateCell(x)),
      h('td', null, time(x.created_at)),
      h('td', { class: 'muted', text: x.component_type })));
    replace(tableBox, h('table', { class: 'list', id: 'executions' },
      h('thead', null, h('tr', null, ['Execution', 'Function', 'State', 'Created', 'Type'].map((t) => h('th', { scope: 'col', text: t })))),
      h('tbody', null, rows)));
  }

  function renderPager(list) {
    const first = list[0];
    const last = list[list.length - 1];
    const atNewest = !cursor || (dir === 'newer' && list.length < PAGE);
    const atOldest = !last || (list.length < PAGE && dir === 'older');
    // A disabled link has no href: it is neither focusable nor clickable.
    const link = (label, disabled, href) => h('a', { class: ['button', disabled && 'disabled'], href: disabled ? null : href }, label);
    replace(pager,
      link('⇤ Newest', !cursor, urlFor(filters)),
      link('← Newer', atNewest || !first, first && urlFor(filters, { cursor: first.created_at, cursor_id: first.execution_id, dir: 'newer' })),
      link('Older →', atOldest, last && urlFor(filters, { cursor: last.created_at, cursor_id: last.execution_id, dir: 'older' })));
  }

  let timer = null;
  let inFlight = false;
  let lastList = '';
  let lastCounts = '';
  async function refresh() {
    if (inFlight || ctx.signal.aborted) return;
    inFlight = true;
    try {
      const [list, counts] = await Promise.all([
        api('GET', '/v1/executions' + query({ ...listQuery(), length: PAGE, cursor, cursor_execution_id: cursorID, direction: cursor ? dir : '' }), { signal: ctx.signal }),
        api('GET', '/v1/execution-counts' + query({ ffqn_prefix: filters.ffqn, execution_id_prefix: filters.id, show_derived: filters.derived ? 'true' : '', deployment_id: filters.dep }), { signal: ctx.signal })
          .catch((e) => ({ error: e })),
      ]);
      // Re-render only what changed, so a live refresh keeps the keyboard focus.
      const listKey = JSON.stringify(list);
      if (listKey !== lastList) {
        lastList = listKey;
        renderTable(list);
        renderPager(list);
      }
      const countsKey = JSON.stringify(counts.error ? String(counts.error.message) : counts);
      if (countsKey !== lastCounts) {
        lastCounts = countsKey;
        if (counts.error) replace(countsBox, errorBox(counts.error, 'Counts'));
        else renderCounts(counts);
      }
      updated.textContent = 'updated ' + localTime(Date.now()).slice(11);
    } catch (e) {
      if (e.name === 'AbortError') return;
      lastList = '';
      replace(tableBox, errorBox(e, 'Could not list executions'));
    } finally {
      inFlight = false;
    }
    schedule();
  }
  function schedule() {
    clearTimeout(timer);
    if (!ctx.signal.aborted && liveIn.checked) timer = setTimeout(() => (document.hidden ? schedule() : refresh()), REFRESH_MS);
  }
  ctx.signal.addEventListener('abort', () => clearTimeout(timer));
  ctx.keys({ '/': () => ffqnIn.focus() });
  refresh();
}
