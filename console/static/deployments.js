// Deployments: the list with status and execution counts, and one
// deployment with its components, their functions, WIT and files.

import { api, bytes, query } from './api.js';
import { h, replace, time, idText, errorBox, empty, shortDigest, copyButton } from './dom.js';
import { BUCKETS } from './states.js';

const PAGE = 50;
const depHref = (id) => '/console/deployments/' + encodeURIComponent(id);

export function deploymentsPage(main, ctx) {
  const box = h('div', null, h('p', { class: 'loading', text: 'Loading deployments…' }));
  replace(main, h('div', { class: 'page-head' }, h('h1', { text: 'Deployments' })), box);
  const cursor = ctx.params.get('cursor') || '';
  api('GET', '/v1/deployments' + query({ length: PAGE, include_component_summary: 'true', cursor_from: cursor }), { signal: ctx.signal })
    .then((list) => {
      if (!list.length) {
        replace(box, empty('No deployments in storage. Executions submitted without one run in unmanaged mode (any function, component sha256:0…0).'));
        return;
      }
      const rows = list.map((d) => h('tr', null,
        h('td', null, idText(d.deployment_id, depHref(d.deployment_id)), d.description ? h('div', { class: 'muted small', text: d.description }) : null),
        h('td', null, h('span', { class: ['dep-status', 'dep-' + d.status], text: d.status })),
        h('td', null, time(d.created_at)),
        h('td', null, d.last_active_at ? time(d.last_active_at) : h('span', { class: 'muted', text: '—' })),
        h('td', { class: 'small' }, ((d.component_summary && d.component_summary.components) || []).map((c) => h('div', { text: `${c.count} ${c.component_type}` }))),
        h('td', { class: 'small' }, BUCKETS.filter(([b]) => d[b]).map(([b, label]) => h('span', { class: ['count', 'state-' + b], text: `${d[b]} ${label}` })))));
      const last = list[list.length - 1];
      replace(box,
        h('table', { class: 'list', id: 'deployments' },
          h('thead', null, h('tr', null, ['Deployment', 'Status', 'Created', 'Last active', 'Components', 'Executions'].map((t) => h('th', { scope: 'col', text: t })))),
          h('tbody', null, rows)),
        h('div', { class: 'pager' },
          cursor ? h('a', { class: 'button', href: '/console/deployments', text: '⇤ Newest' }) : null,
          list.length === PAGE ? h('a', { class: 'button', href: '/console/deployments' + query({ cursor: last.deployment_id }), text: 'Older →' }) : null));
    })
    .catch((e) => {
      if (e.name !== 'AbortError') replace(box, errorBox(e, e.status === 501 ? 'This store does not keep deployments' : 'Could not list deployments'));
    });
}

export function deploymentPage(main, ctx, id) {
  const head = h('div', { class: 'page-head' },
    h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('a', { href: '/console/deployments', text: 'Deployments' })),
    h('h1', null, 'Deployment ', idText(id)));
  const info = h('section', { class: 'card' }, h('p', { class: 'loading', text: 'Loading deployment…' }));
  const comps = h('section', { 'aria-labelledby': 'h-components' }, h('h2', { id: 'h-components', text: 'Components' }), h('p', { class: 'loading', text: 'Loading components…' }));
  replace(main, head, info, comps);

  api('GET', '/v1/deployments/' + encodeURIComponent(id), { signal: ctx.signal }).then((d) => {
    const toml = h('details', null, h('summary', { text: 'deployment.toml' }), h('pre', { class: 'code', text: d.deployment_toml || '' }));
    replace(info,
      h('dl', null,
        h('dt', { text: 'Status' }), h('dd', null, h('span', { class: ['dep-status', 'dep-' + d.status], text: d.status })),
        d.description ? [h('dt', { text: 'Description' }), h('dd', { text: d.description })] : null,
        h('dt', { text: 'Digest' }), h('dd', null, h('span', { class: 'mono', text: d.digest }), copyButton(d.digest, 'digest')),
        h('dt', { text: 'Created' }), h('dd', null, time(d.created_at)),
        h('dt', { text: 'Last active' }), h('dd', null, d.last_active_at ? time(d.last_active_at) : '—'),
        h('dt', { text: 'Executions' }), h('dd', null, h('a', { href: '/console/' + query({ derived: '1', deployment: d.deployment_id }), text: 'executions of this deployment' }))),
      toml,
      h('h3', { text: 'Files' }),
      filesTable((d.files || []).map((f) => ({ path: f.path, digest: f.digest, size: f.size })), ctx));
  }).catch((e) => {
    if (e.name !== 'AbortError') replace(info, errorBox(e, e.status === 404 ? 'No such deployment' : 'Could not load the deployment'));
  });

  api('GET', '/v1/components' + query({ deployment_id: id, exports: 'true', imports: 'true', extensions: 'true' }), { signal: ctx.signal }).then((list) => {
    if (!list.length) {
      replace(comps, h('h2', { id: 'h-components', text: 'Components' }), empty('No components.'));
      return;
    }
    replace(comps, h('h2', { id: 'h-components', text: 'Components' }), list.map((c) => component(c, id, ctx)));
  }).catch((e) => {
    if (e.name !== 'AbortError') replace(comps, h('h2', { id: 'h-components', text: 'Components' }), errorBox(e, 'Could not list components'));
  });
}

function component(c, depId, ctx) {
  const cid = c.component_id;
  const fnRows = (fns, submit) => fns.map((f) => h('tr', null,
    h('td', { class: 'ffqn', text: f.ffqn }),
    h('td', { class: 'mono small', text: '(' + (f.parameter_types || []).map((p) => `${p.name}: ${p.wit_type}`).join(', ') + ')' + (f.return_type ? ' -> ' + f.return_type : '') }),
    h('td', { class: 'small muted', text: f.extension || '' }),
    h('td', null, submit && f.submittable ? h('a', { class: 'button small', href: '/console/submit' + query({ ffqn: f.ffqn }), text: 'Submit…' }) : null)));
  const witBox = h('div');
  const wit = h('details', { class: 'wit' }, h('summary', { text: 'WIT' }), witBox);
  wit.addEventListener('toggle', () => {
    if (!wit.open || witBox.childNodes.length) return;
    witBox.appendChild(h('p', { class: 'loading', text: 'Loading WIT…' }));
    api('GET', '/v1/components/' + encodeURIComponent(cid.component_digest) + '/wit' + query({ deployment_id: depId }), { signal: ctx.signal, text: true })
      .then((t) => replace(witBox, h('pre', { class: 'code', text: String(t) })))
      .catch((e) => replace(witBox, errorBox(e, 'Could not load the WIT')));
  });
  const exportsList = c.exports || [];
  const importsList = c.imports || [];
  return h('div', { class: 'card component' },
    h('h3', null, h('span', { class: 'kind cat-lock', text: cid.component_type }), ' ', h('span', { text: cid.name || '(unnamed)' }), ' ',
      h('span', { class: 'mono small muted', title: cid.component_digest, text: shortDigest(cid.component_digest) }), copyButton(cid.component_digest, 'digest')),
    h('h4', { text: `Exports (${exportsList.length})` }),
    exportsList.length ? h('table', { class: 'functions' }, h('tbody', null, fnRows(exportsList, true))) : empty('None.'),
    h('details', null, h('summary', { text: `Imports (${importsList.length})` }),
      importsList.length ? h('table', { class: 'functions' }, h('tbody', null, fnRows(importsList, false))) : empty('None.')),
    wit,
    (c.files || []).length ? h('details', null, h('summary', { text: `Files (${c.files.length})` }),
      filesTable(c.files.map((f) => ({ path: f.file.path, digest: f.file.digest, size: f.file.size, role: f.role })), ctx)) : null);
}

// filesTable lists files; "view" shows a small UTF-8 file inline, "download"
// saves it (fetched with the token, then handed to the browser as a blob).
function filesTable(files, ctx) {
  if (!files.length) return empty('No files.');
  const view = h('div', { class: 'file-view' });
  const rows = files.map((f) => h('tr', null,
    h('td', { class: 'mono', text: f.path }),
    h('td', { class: 'small muted', text: f.role || '' }),
    h('td', { class: 'num', text: String(f.size) }),
    h('td', { class: 'mono small', title: f.digest, text: shortDigest(f.digest) }),
    h('td', null,
      h('button', { type: 'button', class: 'small', onclick: () => showFile(view, f, ctx) }, 'view'),
      h('button', { type: 'button', class: 'small', onclick: () => download(view, f, ctx) }, 'download'))));
  return h('div', null, h('table', { class: 'files' }, h('tbody', null, rows)), view);
}

async function showFile(view, f, ctx) {
  replace(view, h('p', { class: 'loading', text: 'Loading ' + f.path + '…' }));
  try {
    const b = await bytes('/v1/files/' + encodeURIComponent(f.digest), { signal: ctx.signal });
    let text;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(b.slice(0, 256 * 1024));
    } catch {
      replace(view, h('p', { class: 'muted', text: `${f.path} is binary (${b.length} bytes); use download.` }));
      return;
    }
    replace(view, h('h4', { class: 'mono', text: f.path }), h('pre', { class: 'code', text }));
  } catch (e) {
    if (e.name !== 'AbortError') replace(view, errorBox(e, 'Could not read ' + f.path));
  }
}

async function download(view, f, ctx) {
  try {
    const b = await bytes('/v1/files/' + encodeURIComponent(f.digest), { signal: ctx.signal });
    const url = URL.createObjectURL(new Blob([b], { type: 'application/octet-stream' }));
    const a = h('a', { href: url, download: f.path.split('/').pop() || 'file' });
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (e) {
    if (e.name !== 'AbortError') replace(view, errorBox(e, 'Could not download ' + f.path));
  }
}
