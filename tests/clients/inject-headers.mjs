// Preload (`node --import ./inject-headers.mjs TOOL ...`) that wraps the
// global fetch for one origin, for Node.js tools that have no option to pass
// HTTP headers or to show what they send (the conformance suite, the MCP
// Inspector):
//
//   CHATAIGNE_INJECT_ORIGIN   origin the wrapper applies to, e.g.
//                             http://127.0.0.1:8080 (required)
//   CHATAIGNE_INJECT_HEADERS  JSON object of headers added to each request to
//                             that origin, unless the tool set them itself
//                             (e.g. {"Authorization": "Bearer ..."})
//   CHATAIGNE_WIRE_LOG        file to which each JSON exchange with that
//                             origin is appended, one JSON line per message:
//                             {"dir": ">", "body": <request body>} and
//                             {"dir": "<", "status": N, "body": <response
//                             body>} (JSON responses only: an event stream is
//                             left to the tool, unread)
//
// When the tool ships the undici package (the conformance suite sends some
// requests with undici.request), the headers are also added by a wrapper of
// undici's global dispatcher, which Node's own fetch shares; and requests
// made with node:http's `request` (the suite's raw header probes of the
// 2026-07-28 scenarios) get them through a wrapper of that function.

import { appendFileSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';

const origin = process.env.CHATAIGNE_INJECT_ORIGIN ? new URL(process.env.CHATAIGNE_INJECT_ORIGIN).origin : null;
const extra = JSON.parse(process.env.CHATAIGNE_INJECT_HEADERS || '{}');
const wireLog = process.env.CHATAIGNE_WIRE_LOG;
const originalFetch = globalThis.fetch;

function targetOf(input) {
  if (typeof input === 'string') return input;
  if (input instanceof URL) return input.href;
  return input?.url ?? String(input);
}

function applies(input) {
  if (!origin) return false;
  try {
    return new URL(targetOf(input)).origin === origin;
  } catch {
    return false;
  }
}

// `headers` (an object, a flat [name, value, ...] array, or absent) with the
// extra headers it lacks.
function withExtra(headers) {
  const pairs = [];
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2) pairs.push([String(headers[i]), headers[i + 1]]);
  } else if (headers) {
    pairs.push(...Object.entries(headers));
  }
  const present = new Set(pairs.map(([name]) => name.toLowerCase()));
  const added = Object.entries(extra).filter(([name]) => !present.has(name.toLowerCase()));
  return Object.fromEntries([...pairs, ...added]);
}

function wrapUndiciDispatcher() {
  let undici;
  try {
    undici = createRequire(process.argv[1] ?? import.meta.url)('undici');
  } catch {
    return; // the tool has no undici of its own
  }
  const inner = undici.getGlobalDispatcher();
  undici.setGlobalDispatcher(
    inner.compose((dispatch) => (options, handler) => {
      let target = null;
      try {
        target = new URL(String(options.origin)).origin;
      } catch {
        // not a URL: left alone
      }
      const next = target === origin ? { ...options, headers: withExtra(options.headers) } : options;
      return dispatch(next, handler);
    }),
  );
}

// `http.request(options[, callback])` for the origin: the extra headers the
// options lack are added (a URL-first call is left alone: the suite does not
// make one).
function wrapNodeHttp() {
  const inner = http.request;
  http.request = function requestForOrigin(options, ...rest) {
    if (options && typeof options === 'object' && !(options instanceof URL) && options.hostname) {
      const port = options.port ? `:${options.port}` : '';
      let target = null;
      try {
        target = new URL(`${options.protocol ?? 'http:'}//${options.hostname}${port}`).origin;
      } catch {
        // not a URL: left alone
      }
      if (target === origin) {
        return inner.call(this, { ...options, headers: withExtra(options.headers) }, ...rest);
      }
    }
    return inner.call(this, options, ...rest);
  };
}

if (origin && Object.keys(extra).length > 0) {
  wrapUndiciDispatcher();
  wrapNodeHttp();
}

globalThis.fetch = async function fetchForOrigin(input, init = {}) {
  if (!applies(input)) return originalFetch(input, init);
  const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
  for (const [name, value] of Object.entries(extra)) {
    if (!headers.has(name)) headers.set(name, value);
  }
  if (!wireLog) return originalFetch(input, { ...init, headers });
  if (typeof init.body === 'string') record({ dir: '>', body: parsed(init.body) });
  const response = await originalFetch(input, { ...init, headers });
  const json = (response.headers.get('content-type') ?? '').includes('application/json');
  if (!json || [101, 204, 205, 304].includes(response.status)) return response;
  // Read the JSON body once, log it, and hand the tool an identical response.
  const text = await response.text();
  record({ dir: '<', status: response.status, body: parsed(text) });
  const copy = new Response(text, { status: response.status, statusText: response.statusText, headers: response.headers });
  Object.defineProperty(copy, 'url', { value: response.url });
  return copy;
};

function parsed(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function record(entry) {
  appendFileSync(wireLog, `${JSON.stringify(entry)}\n`);
}
