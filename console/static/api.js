// The HTTP API client: the same routes, bodies and bearer token as any other
// client (docs/http-api.md). Errors carry the server's own message.

import { h, dialog } from './dom.js';

const TOKEN_KEY = 'stela.apiToken';

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export const getToken = () => sessionStorage.getItem(TOKEN_KEY) || '';
export function setToken(t) {
  if (t) sessionStorage.setItem(TOKEN_KEY, t);
  else sessionStorage.removeItem(TOKEN_KEY);
  document.dispatchEvent(new CustomEvent('stela:token'));
}

// query builds ?a=b&c=d from an object; arrays repeat the key, empty values are dropped.
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v === undefined || v === null || v === '') continue;
    for (const x of Array.isArray(v) ? v : [v]) q.append(k, String(x));
  }
  const s = q.toString();
  return s ? '?' + s : '';
}

let authPrompt = null;

// askToken shows the token prompt once, however many requests were refused;
// it resolves true when a token was entered.
export function askToken(hadToken) {
  if (!authPrompt) {
    const input = h('input', { type: 'password', name: 'token', id: 'token-input', autocomplete: 'off', required: true });
    authPrompt = dialog({
      title: 'API token required',
      body: [
        h('p', { text: hadToken ? 'The server refused the token. Enter a valid one.' : 'This server requires a bearer token for its API (stela dev --token, or STELA_API_TOKEN on the Lambda; a JWT behind an API Gateway JWT authorizer).' }),
        h('label', { for: 'token-input', text: 'Token' }), input,
        h('p', { class: 'hint', text: 'It is kept in this tab only (sessionStorage) and sent as Authorization: Bearer.' }),
      ],
      buttons: [{ label: 'Cancel', value: null }, { label: 'Sign in', value: 'ok', class: 'primary' }],
      validate: () => (input.value.trim() ? '' : 'Enter the token.'),
    }).then((v) => {
      authPrompt = null;
      if (v) setToken(input.value.trim());
      return !!v;
    });
  }
  return authPrompt;
}

// api sends one request. body (any value) is sent as JSON. It resolves with
// the parsed JSON (or text) and rejects with an ApiError. On 401 it asks for
// a token once and retries with it.
export async function api(method, path, { body, signal, text } = {}) {
  for (let attempt = 0; ; attempt++) {
    const headers = { Accept: text ? 'text/plain' : 'application/json' };
    const token = getToken();
    if (token) headers.Authorization = 'Bearer ' + token;
    const init = { method, headers, signal, cache: 'no-store', credentials: 'omit' };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(path, init);
    } catch (e) {
      if (e.name === 'AbortError') throw e;
      throw new ApiError(0, 'network error: ' + e.message);
    }
    const ct = res.headers.get('Content-Type') || '';
    const raw = await res.text();
    if (res.status === 401) document.dispatchEvent(new CustomEvent('stela:auth-required'));
    if (res.status === 401 && attempt < 3) {
      if (await askToken(!!token)) continue;
      throw new ApiError(401, raw || 'missing or invalid API token');
    }
    let data = raw;
    if (ct.startsWith('application/json') && raw) {
      try {
        data = JSON.parse(raw);
      } catch {
        data = raw;
      }
    }
    if (!res.ok) {
      const msg = data && typeof data === 'object' && 'err' in data ? String(data.err) : String(raw || res.statusText);
      throw new ApiError(res.status, msg);
    }
    return data;
  }
}

// bytes fetches raw bytes (GET /v1/files/…) with the token.
export async function bytes(path, { signal } = {}) {
  const headers = {};
  const token = getToken();
  if (token) headers.Authorization = 'Bearer ' + token;
  const res = await fetch(path, { headers, signal, cache: 'no-store', credentials: 'omit' });
  if (!res.ok) {
    const raw = await res.text();
    let msg = raw;
    try {
      msg = JSON.parse(raw).err || raw;
    } catch { /* plain text */ }
    throw new ApiError(res.status, msg);
  }
  return new Uint8Array(await res.arrayBuffer());
}

// okMessage returns the text of an {"ok": …} answer.
export const okMessage = (r) => (r && typeof r === 'object' && 'ok' in r ? String(r.ok) : String(r));
