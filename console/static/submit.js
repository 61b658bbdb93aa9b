// Submit an execution: POST /v1/executions (or PUT with a chosen id).
// URL: /console/submit?ffqn=<ffqn>&params=<JSON array>

import { api, query, okMessage } from './api.js';
import { h, replace, errorBox, confirm, execHref } from './dom.js';

export function submitPage(main, ctx) {
  const p = ctx.params;
  const ffqnIn = h('input', { id: 's-ffqn', name: 'ffqn', required: true, size: 50, list: 's-ffqns', placeholder: 'ns:pkg/ifc.fn', value: p.get('ffqn') || '', autocomplete: 'off' });
  const datalist = h('datalist', { id: 's-ffqns' });
  const paramsIn = h('textarea', { id: 's-params', name: 'params', rows: 8, cols: 60, spellcheck: 'false', value: p.get('params') || '[]' });
  const idIn = h('input', { id: 's-id', name: 'id', size: 34, placeholder: 'optional: E_… for an idempotent PUT', autocomplete: 'off' });
  const pausedIn = h('input', { type: 'checkbox', id: 's-paused', name: 'paused' });
  // Without a deployment the server stores the type the body names, and an
  // activity when it names none: a workflow would be stored as an activity,
  // so the type must be chosen then. With one, the deployment's type applies.
  const typeSel = h('select', { id: 's-type', name: 'component_type' },
    h('option', { value: '', text: 'choose…' }),
    ['activity', 'workflow', 'activity_stub', 'webhook_endpoint'].map((t) => h('option', { value: t, text: t })));
  const typeErr = h('p', { class: 'error-line', role: 'alert' });
  let managed = null; // unknown until GET /v1/deployment-id answers
  const err = h('div', { 'aria-live': 'assertive' });
  const paramsErr = h('p', { class: 'error-line', role: 'alert' });
  const genBtn = h('button', { type: 'button', onclick: async () => {
    try {
      idIn.value = okMessage(await api('GET', '/v1/execution-id', { signal: ctx.signal, text: true })).trim();
    } catch (e) {
      replace(err, errorBox(e, 'Could not generate an id'));
    }
  } }, 'Generate');

  const form = h('form', { class: 'submit-form card', onsubmit: async (e) => {
    e.preventDefault();
    replace(err);
    paramsErr.textContent = '';
    typeErr.textContent = '';
    let params;
    try {
      params = JSON.parse(paramsIn.value);
    } catch (x) {
      paramsErr.textContent = 'Params are not JSON: ' + x.message;
      paramsIn.focus();
      return;
    }
    if (!Array.isArray(params)) {
      paramsErr.textContent = 'Params must be a JSON array, e.g. ["World"] or [3, 5].';
      paramsIn.focus();
      return;
    }
    if (managed === false && !typeSel.value) {
      typeErr.textContent = 'Choose the component type: without a deployment the server cannot tell an activity from a workflow (it would store an activity).';
      typeSel.focus();
      return;
    }
    const ffqn = ffqnIn.value.trim();
    const body = { ffqn, params };
    if (pausedIn.checked) body.paused = true;
    if (typeSel.value && !managed) body.component_type = typeSel.value;
    const id = idIn.value.trim();
    if (!(await confirm('Submit execution', `Submit ${ffqn}(${JSON.stringify(params).slice(1, -1)})${id ? ' as ' + id : ''}${body.paused ? ', paused' : ''}?`, 'Submit'))) return;
    try {
      const r = id
        ? await api('PUT', '/v1/executions/' + encodeURIComponent(id), { body, signal: ctx.signal })
        : await api('POST', '/v1/executions', { body, signal: ctx.signal });
      ctx.navigate(execHref(id || okMessage(r)));
    } catch (x) {
      if (x.name !== 'AbortError') replace(err, errorBox(x, 'Submit failed'));
    }
  } },
    h('label', { for: 's-ffqn', text: 'Function (ffqn)' }), ffqnIn, datalist,
    h('label', { for: 's-params', text: 'Params (JSON array)' }), h('div', null, paramsIn, paramsErr),
    h('label', { for: 's-id', text: 'Execution id' }), h('div', { class: 'inline' }, idIn, genBtn),
    h('label', { for: 's-type', text: 'Component type' }), h('div', null, typeSel, typeErr),
    h('label', { for: 's-paused', class: 'check' }, pausedIn, ' Create paused'),
    h('div', { class: 'buttons' }, h('button', { type: 'submit', class: 'primary', id: 's-submit' }, 'Submit…')),
    err);

  replace(main,
    h('div', { class: 'page-head' }, h('h1', { text: 'Submit an execution' })),
    h('p', { class: 'muted', text: 'With a deployment in storage the function must be a submittable export of it; a fresh store accepts any function (unmanaged mode). Params are not type-checked here.' }),
    form);
  ffqnIn.focus();

  api('GET', '/v1/deployment-id', { signal: ctx.signal })
    .then(() => {
      managed = true;
      typeSel.replaceChildren(h('option', { value: '', text: "the deployment's" }));
      typeSel.disabled = true;
    })
    .catch((x) => {
      if (x.name !== 'AbortError') managed = false;
    })
    .finally(() => { typeSel.dataset.managed = String(managed); });

  // Suggest the submittable exports of the current deployment, if there is one.
  api('GET', '/v1/components' + query({ exports: 'true', submittable: 'true' }), { signal: ctx.signal })
    .then((components) => {
      for (const c of components || []) for (const f of c.exports || []) datalist.appendChild(h('option', { value: f.ffqn }));
    })
    .catch(() => { /* no deployment: no suggestions */ });
}
