// DOM helpers. Every string ends up as a text node or an attribute value:
// nothing here (or anywhere in the console) parses HTML, so user data
// (ffqns, params, results, logs, errors) can never become markup.

// h builds an element. attrs: class, text, on<Event> handlers (functions),
// dataset (object), and any other attribute (set with setAttribute; false
// and null skip it). children: nodes, strings (text), arrays, null/false.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = Array.isArray(v) ? v.filter(Boolean).join(' ') : v;
    else if (k === 'text') el.textContent = String(v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'value') el.value = v;
    else if (k === 'checked' || k === 'selected' || k === 'disabled' || k === 'open') el[k] = !!v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

// replace empties el and appends children.
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// --- time ------------------------------------------------------------------------

// parseTime parses an RFC 3339 timestamp with up to nanosecond precision.
export function parseTime(iso) {
  if (!iso) return null;
  const t = Date.parse(String(iso).replace(/(\.\d{3})\d+/, '$1'));
  return Number.isNaN(t) ? null : t;
}

const pad = (n, w = 2) => String(n).padStart(w, '0');

// localTime formats ms since the epoch in local time; withMs adds milliseconds.
export function localTime(ms, withMs) {
  const d = new Date(ms);
  const date = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
  const time = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  return `${date} ${time}${withMs ? '.' + pad(d.getMilliseconds(), 3) : ''}`;
}

// time returns a <time> element in local time with the UTC value on hover.
export function time(iso, withMs) {
  const ms = parseTime(iso);
  if (ms === null) return h('span', { class: 'muted', text: iso ? String(iso) : '—' });
  return h('time', { datetime: iso, title: 'UTC ' + iso, text: localTime(ms, withMs) });
}

// duration formats a span of milliseconds (e.g. "1.2 s", "3 min 4 s").
export function duration(ms) {
  const neg = ms < 0;
  ms = Math.abs(ms);
  let out;
  if (ms < 1000) out = `${Math.round(ms)} ms`;
  else if (ms < 60e3) out = `${(ms / 1000).toFixed(ms < 10e3 ? 1 : 0)} s`;
  else if (ms < 3600e3) out = `${Math.floor(ms / 60e3)} min` + (ms % 60e3 >= 1000 ? ` ${Math.floor((ms % 60e3) / 1000)} s` : '');
  else if (ms < 86400e3) out = `${Math.floor(ms / 3600e3)} h ${Math.floor((ms % 3600e3) / 60e3)} min`;
  else out = `${Math.floor(ms / 86400e3)} d ${Math.floor((ms % 86400e3) / 3600e3)} h`;
  return neg ? '-' + out : out;
}

// --- values ----------------------------------------------------------------------

// json renders a value as pretty-printed JSON text.
export function json(v, cls) {
  return h('pre', { class: ['json', cls], text: JSON.stringify(v, null, 2) });
}

// shortDigest abbreviates sha256:<hex>.
export function shortDigest(d) {
  const s = String(d || '');
  return s.startsWith('sha256:') ? s.slice(0, 15) + '…' : s;
}

// copyButton copies text to the clipboard.
export function copyButton(text, label) {
  return h('button', {
    type: 'button', class: 'copy', title: 'Copy ' + (label || text), 'aria-label': 'Copy ' + (label || 'to clipboard'),
    onclick: async (e) => {
      e.preventDefault();
      e.stopPropagation();
      try {
        await navigator.clipboard.writeText(text);
        toast('Copied ' + (label || text));
      } catch {
        const ta = h('textarea', { class: 'offscreen', value: text });
        document.body.appendChild(ta);
        ta.select();
        const ok = document.execCommand('copy');
        ta.remove();
        toast(ok ? 'Copied ' + (label || text) : 'Copy failed: select the text instead', ok ? '' : 'error');
      }
    },
  }, h('span', { class: 'offscreen', text: 'copy' }));
}

// id renders an id as monospace text with a copy button.
export function idText(id, href) {
  const text = href ? h('a', { href, class: 'mono', text: id }) : h('span', { class: 'mono', text: id });
  return h('span', { class: 'id' }, text, copyButton(id, id));
}

// pathSegment encodes an id for a URL path, keeping ':' readable ('/' in a
// join set name must stay escaped).
export const pathSegment = (id) => encodeURIComponent(id).replace(/%3A/gi, ':');
export const execHref = (id) => '/console/executions/' + pathSegment(id);

// --- feedback --------------------------------------------------------------------

// toast shows a short message at the bottom of the page.
export function toast(message, kind) {
  const box = document.getElementById('toasts');
  const t = h('div', { class: ['toast', kind], text: message });
  box.appendChild(t);
  setTimeout(() => t.remove(), kind === 'error' ? 8000 : 3500);
}

// errorBox renders an error (an ApiError shows the server's own message).
export function errorBox(err, what) {
  const status = err && err.status ? ` (HTTP ${err.status})` : '';
  return h('div', { class: 'error', role: 'alert' },
    what ? h('strong', { text: what + ': ' }) : null,
    h('span', { class: 'error-message', text: (err && err.message ? err.message : String(err)) }),
    status);
}

// plural returns "1 child", "2 children".
export const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;

export const loading = (what) => h('p', { class: 'loading', text: `Loading ${what || ''}…` });
export const empty = (text) => h('p', { class: 'empty', text });

// --- long tables -----------------------------------------------------------------

// foldRows keeps a long table body usable (a 100-child fan-out has hundreds
// of events): past head + tail + 5 rows, only the first head and the last
// tail rows show, and a row between them says how many are hidden and shows
// them on demand; unfolded, a last row folds them again. opts.unfolded (a
// Set shared by the page) remembers, by opts.key, the tables the reader
// unfolded, so a re-render keeps them open. Call it again after adding rows.
export function foldRows(tbody, opts) {
  const { key, unfolded, head = 10, tail = 10, what = 'rows' } = opts;
  const old = tbody.querySelector(':scope > tr.fold');
  if (old) old.remove();
  const rows = [...tbody.rows];
  const n = rows.length;
  if (n <= head + tail + 5) {
    for (const r of rows) r.hidden = false;
    return;
  }
  const open = unfolded.has(key);
  const hidden = n - head - tail;
  rows.forEach((r, i) => { r.hidden = !open && i >= head && i < n - tail; });
  const cols = [...rows[0].cells].reduce((sum, c) => sum + c.colSpan, 0);
  const toggle = h('button', {
    type: 'button', class: 'small fold-toggle', 'aria-expanded': open ? 'true' : 'false',
    onclick: () => {
      if (open) unfolded.delete(key);
      else unfolded.add(key);
      foldRows(tbody, opts);
      if (open) tbody.querySelector(':scope > tr.fold').scrollIntoView({ block: 'nearest' });
    },
  }, open ? `Fold: show only the first ${head}${tail ? ` and the last ${tail}` : ''} of ${n} ${what}` : `Show ${hidden} more ${what}`);
  const row = h('tr', { class: 'fold', dataset: { hiddenRows: open ? '0' : String(hidden) } },
    h('td', { colspan: String(cols) }, open ? null : h('span', { class: 'muted small', text: `… ${hidden} of ${n} ${what} folded … ` }), toggle));
  if (open) tbody.appendChild(row);
  else tbody.insertBefore(row, rows[n - tail] || null);
}

// --- dialogs ---------------------------------------------------------------------

// dialog opens a modal <dialog> with body nodes and buttons; it resolves with
// the value of the button pressed (null on Escape / Cancel). validate, when
// given, runs before closing on a non-null value and returns an error string.
export function dialog({ title, body, buttons, validate }) {
  return new Promise((resolve) => {
    const errLine = h('p', { class: 'error-line', role: 'alert' });
    const dlg = h('dialog', { class: 'dialog', 'aria-label': title });
    const form = h('form', { method: 'dialog' },
      h('h2', { text: title }),
      body,
      errLine,
      // Reversed in the DOM (and back by CSS) so Enter in a field presses the main button.
      h('div', { class: 'buttons' }, buttons.slice().reverse().map((b) =>
        h('button', { type: 'submit', value: b.value === null ? '' : b.value, class: b.class, dataset: { value: b.value === null ? '' : 'x' } }, b.label))));
    form.addEventListener('submit', async (e) => {
      const btn = e.submitter;
      const isCancel = !btn || btn.dataset.value === '';
      if (isCancel) return; // closes with returnValue ''
      e.preventDefault();
      if (validate) {
        const msg = await validate(btn.value);
        if (msg) {
          errLine.textContent = msg;
          return;
        }
      }
      dlg.close(btn.value);
    });
    dlg.appendChild(form);
    dlg.addEventListener('close', () => {
      dlg.remove();
      resolve(dlg.returnValue === '' ? null : dlg.returnValue);
    });
    document.body.appendChild(dlg);
    dlg.showModal();
    const first = dlg.querySelector('input, textarea, select') || dlg.querySelector('button:not([data-value=""])');
    if (first) first.focus();
  });
}

// confirm asks a yes/no question; resolves true when confirmed.
export async function confirm(title, message, confirmLabel, danger) {
  const v = await dialog({
    title,
    body: h('p', { text: message }),
    buttons: [{ label: 'Cancel', value: null }, { label: confirmLabel || 'OK', value: 'yes', class: danger ? 'danger' : 'primary' }],
  });
  return v === 'yes';
}
