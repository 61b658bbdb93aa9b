// The console's entry point: routes on the URL path (every page has its own
// URL under /console/, which the server answers with this app), keeps the
// navigation in the history without reloading, and handles the token.

import { getToken, setToken, askToken } from './api.js';
import { h, replace } from './dom.js';
import { listPage } from './list.js';
import { executionPage } from './execution.js';
import { submitPage } from './submit.js';
import { deploymentsPage, deploymentPage } from './deployments.js';

const routes = [
  [/^\/console\/?$/, 'executions', (m, ctx) => listPage(m, ctx)],
  [/^\/console\/executions\/([^/]+)\/?$/, 'executions', (m, ctx, id) => executionPage(m, ctx, id)],
  [/^\/console\/submit\/?$/, 'submit', (m, ctx) => submitPage(m, ctx)],
  [/^\/console\/deployments\/?$/, 'deployments', (m, ctx) => deploymentsPage(m, ctx)],
  [/^\/console\/deployments\/([^/]+)\/?$/, 'deployments', (m, ctx, id) => deploymentPage(m, ctx, id)],
];

const main = document.getElementById('main');
let current = null; // {abort: AbortController, keys: {}}

function render() {
  if (current) current.abort.abort();
  const abort = new AbortController();
  const keys = {};
  current = { abort, keys };
  const path = location.pathname;
  const ctx = {
    signal: abort.signal,
    params: new URLSearchParams(location.search),
    navigate,
    keys: (map) => Object.assign(keys, map),
  };
  for (const [re, section, page] of routes) {
    const m = re.exec(path);
    if (!m) continue;
    for (const a of document.querySelectorAll('header nav a')) {
      if (a.dataset.section === section) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    }
    let arg;
    try {
      arg = m[1] === undefined ? undefined : decodeURIComponent(m[1]);
    } catch {
      arg = m[1];
    }
    document.title = 'Stela · ' + (arg || section);
    page(main, ctx, arg);
    return;
  }
  replace(main, h('h1', { text: 'Page not found' }), h('p', null, 'The console has no page at ', h('code', { text: path }), '. ', h('a', { href: '/console/', text: 'Go to the executions.' })));
}

// navigate shows url without reloading the page.
export function navigate(url, { replaceState } = {}) {
  if (replaceState) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  render();
  main.focus({ preventScroll: true });
  window.scrollTo(0, 0);
}

// Same-origin links to console pages are followed in place.
document.addEventListener('click', (e) => {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = e.target.closest('a[href]');
  if (!a || a.target || a.hasAttribute('download')) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || !url.pathname.startsWith('/console/') || url.pathname.startsWith('/console/static/')) return;
  e.preventDefault();
  navigate(url.pathname + url.search + url.hash);
});
window.addEventListener('popstate', render);

// Keyboard: page shortcuts (e.g. "/" focuses the filter) unless typing.
document.addEventListener('keydown', (e) => {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  const t = e.target;
  if (t && (t.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(t.tagName))) return;
  if (document.querySelector('dialog[open]')) return;
  const fn = current && current.keys[e.key];
  if (fn) {
    e.preventDefault();
    fn();
  }
});

let authRequired = false;

function renderAuth() {
  const box = document.getElementById('auth-status');
  if (!getToken()) {
    // Offer to sign in once the server has refused a request (e.g. the prompt was dismissed).
    replace(box, authRequired ? h('button', { type: 'button', class: 'small', id: 'sign-in', onclick: async () => {
      if (await askToken(false)) render();
    } }, 'Sign in') : null);
    return;
  }
  replace(box, h('span', { class: 'muted', text: 'token set ' }),
    h('button', { type: 'button', class: 'small', onclick: () => {
      setToken('');
      render();
    } }, 'Sign out'));
}
document.addEventListener('stela:token', renderAuth);
document.addEventListener('stela:auth-required', () => {
  authRequired = true;
  renderAuth();
});

renderAuth();
render();
