// The view side of MCP Apps (extension io.modelcontextprotocol/ui, protocol
// 2026-01-26), over the host's postMessage channel: the ui/initialize
// handshake, the tool-input and tool-result notifications, the host context
// (locale, theme, style variables), tools/call requests through the host,
// and size-changed notifications. Shared by every view; inlined into each
// document when the catalogue is built, so each view stays one document.
const Bridge = (() => {
  const PROTOCOL_VERSION = '2026-01-26';
  const REQUEST_TIMEOUT_MS = 60000;
  const pending = new Map();
  const listeners = new Map();
  let nextId = 1;
  let context = {};

  function post(message) {
    window.parent.postMessage(message, '*');
  }

  function notify(method, params) {
    post({ jsonrpc: '2.0', method, params });
  }

  // A JSON-RPC request to the host; rejects with {code, message, data} when
  // the host answers an error, or when it does not answer in time.
  function request(method, params) {
    const id = nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        pending.delete(id);
        reject({ code: -32001, message: 'no answer from the host' });
      }, REQUEST_TIMEOUT_MS);
      pending.set(id, { resolve, reject, timer });
      post({ jsonrpc: '2.0', id, method, params });
    });
  }

  function answer(id, result) {
    post({ jsonrpc: '2.0', id, result });
  }

  function emit(method, params) {
    for (const listener of listeners.get(method) || []) {
      listener(params || {});
    }
  }

  window.addEventListener('message', (event) => {
    if (event.source !== window.parent) return;
    const message = event.data;
    if (!message || typeof message !== 'object' || message.jsonrpc !== '2.0') return;
    const hasId = typeof message.id === 'number' || typeof message.id === 'string';
    if (hasId && typeof message.method !== 'string') {
      const waiting = pending.get(message.id);
      if (!waiting) return;
      pending.delete(message.id);
      clearTimeout(waiting.timer);
      if (message.error) waiting.reject(message.error);
      else waiting.resolve(message.result);
      return;
    }
    if (typeof message.method !== 'string') return;
    if (hasId) {
      // Requests from the host: liveness and the notice before teardown.
      if (message.method === 'ping' || message.method === 'ui/resource-teardown') {
        answer(message.id, {});
      } else {
        post({
          jsonrpc: '2.0',
          id: message.id,
          error: { code: -32601, message: 'Method not found' },
        });
      }
      return;
    }
    if (message.method === 'ui/notifications/host-context-changed') {
      context = Object.assign({}, context, message.params || {});
      applyContext();
    }
    emit(message.method, message.params);
  });

  function applyContext() {
    const root = document.documentElement;
    if (context.theme === 'dark' || context.theme === 'light') {
      root.dataset.theme = context.theme;
      root.style.colorScheme = context.theme;
    }
    const variables = (context.styles && context.styles.variables) || {};
    for (const [name, value] of Object.entries(variables)) {
      if (typeof value === 'string' && name.startsWith('--')) {
        root.style.setProperty(name, value);
      }
    }
    root.lang = locale();
    emit('context', context);
  }

  // "fr" or "en": the host's locale, else the browser's.
  function locale() {
    const tag = String(context.locale || navigator.language || 'en').toLowerCase();
    return tag.startsWith('fr') ? 'fr' : 'en';
  }

  let lastSize = '';
  function reportSize() {
    const root = document.documentElement;
    const width = Math.ceil(root.scrollWidth);
    const height = Math.ceil(root.getBoundingClientRect().height);
    const size = `${width}x${height}`;
    if (size === lastSize) return;
    lastSize = size;
    notify('ui/notifications/size-changed', { width, height });
  }

  // Registers `listener` for a host notification ("ui/notifications/…"), or
  // for "context" (the host context, first and at each change).
  function on(method, listener) {
    if (!listeners.has(method)) listeners.set(method, []);
    listeners.get(method).push(listener);
  }

  async function connect(name) {
    const result = await request('ui/initialize', {
      protocolVersion: PROTOCOL_VERSION,
      appInfo: { name, version: '1.0.0' },
      appCapabilities: { availableDisplayModes: ['inline'] },
    });
    context = (result && result.hostContext) || {};
    applyContext();
    notify('ui/notifications/initialized', {});
    if (typeof ResizeObserver === 'function') {
      new ResizeObserver(reportSize).observe(document.documentElement);
    }
    reportSize();
  }

  // Calls a tool of this server through the host.
  function callTool(name, args) {
    return request('tools/call', { name, arguments: args });
  }

  // The Chataigne envelope {data, meta} of a tool result: its
  // structuredContent, else the text block that holds it as JSON (the
  // Connected Apps profile carries no structuredContent).
  function envelope(result) {
    if (result && result.structuredContent && typeof result.structuredContent === 'object') {
      return result.structuredContent;
    }
    for (const block of (result && result.content) || []) {
      if (!block || block.type !== 'text' || typeof block.text !== 'string') continue;
      try {
        const parsed = JSON.parse(block.text);
        if (parsed && typeof parsed === 'object' && 'data' in parsed) return parsed;
      } catch (_) {
        // the summary line, not JSON
      }
    }
    return null;
  }

  // What a failed call says: {code, message, details} from the error
  // envelope of an isError result, or from a JSON-RPC error.
  function failure(result, rpcError) {
    if (rpcError) {
      const data = rpcError.data && typeof rpcError.data === 'object' ? rpcError.data : {};
      const error = data.error && typeof data.error === 'object' ? data.error : data;
      return {
        code: typeof error.code === 'string' ? error.code : '',
        message: String(error.message || rpcError.message || ''),
        details: error.details || {},
      };
    }
    const error = ((envelope(result) || {}).data || {}).error || {};
    const first = ((result && result.content) || []).find((b) => b && b.type === 'text');
    return {
      code: typeof error.code === 'string' ? error.code : '',
      message: String(error.message || (first && first.text) || ''),
      details: error.details || {},
    };
  }

  // Random hexadecimal, from the platform's generator.
  function randomKey(prefix) {
    const bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    return prefix + Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  }

  return { on, connect, callTool, envelope, failure, locale, randomKey, reportSize };
})();

// The labels of the tool results, by type and wire value, in the view's
// language.
function label(type, value) {
  const row = ((CATALOGUE.labels || {})[type] || {})[value];
  if (!row) return String(value);
  return Bridge.locale() === 'fr' ? row.fr : row.en;
}

// The view's own words: `texts` holds {fr, en} pairs.
function say(texts, key, ...args) {
  const entry = texts[key];
  const text = entry ? entry[Bridge.locale()] : key;
  return typeof text === 'function' ? text(...args) : text;
}

// An element with its attributes ("text" sets its text) and children
// (strings become text nodes, never markup).
function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'text') node.textContent = value;
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  return node;
}

// Shows one state (loading, empty, error) in the view's status region.
function showState(kind, text) {
  const state = document.getElementById('state');
  state.hidden = !kind;
  state.className = `state ${kind || ''}`;
  state.textContent = text || '';
  document.getElementById('main').setAttribute('aria-busy', kind === 'loading' ? 'true' : 'false');
}
