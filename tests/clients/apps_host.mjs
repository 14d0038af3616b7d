// A real MCP Apps host in a real browser, for the server's views: the test
// host page (apps_host.html) speaks the host side of the extension through
// the official AppBridge of @modelcontextprotocol/ext-apps, in the system's
// Chromium (playwright-core); the views run in a sandbox proxy on another
// origin (apps_sandbox.html) under the CSP a host builds from the resource's
// `_meta.ui.csp` plus the Connected Apps script rule ('unsafe-inline' only).
// The host's MCP connection is the v2 TypeScript client
// (@modelcontextprotocol/client) with the user's token: it lists the tools,
// reads each linked `ui://` resource, calls the tool and hands the view the
// input and the result; the view's tools/call go through it to the gateway.
//
//   node apps_host.mjs [--clients DIR] --chromium PATH --out DIR < plan.json > report.json
//
// Plan: {"url", "token", "name", "locales": ["fr", "en"], "widths": [360, 1280],
// "views": [{"view": "board"|"conversation"|"chart", "tool", "arguments"}]}.
// Each view is rendered once per locale and width; then, on the board, the
// first card's next-status button is pressed from the keyboard; on the
// conversation, a reply is sent, its answer lost by the host, and sent again;
// on the chart, the bars' values are read.
//
// Report: {"server", "tools", "resources": [{uri, mimeType, meta, bytes}],
// "control_violations" (what the CSP refused in a copy of a view that loads
// an image from elsewhere: never empty when the watch works),
// "renders": [{name, view, locale, width, resource_uri, result, html_lang,
// console_errors, csp_violations, overflow, small_targets, axe, sizes,
// board?, conversation?, chart?, screenshot}]}. Exit code 1 when the host could
// not be driven (the caller judges the report).

import { readFileSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

function option(name) {
  const at = process.argv.indexOf(name);
  return at >= 0 ? process.argv[at + 1] : undefined;
}

const dir = option('--clients') ?? process.env.CHATAIGNE_TEST_MCP_CLIENTS;
if (!dir) throw new Error('where the clients are installed: --clients DIR or CHATAIGNE_TEST_MCP_CLIENTS');
const v2 = createRequire(join(dir, 'ts-sdk-v2', 'package.json'));
const { Client, StreamableHTTPClientTransport } = v2('@modelcontextprotocol/client');
const a11y = createRequire(join(dir, 'a11y', 'package.json'));
const { chromium } = a11y('playwright-core');
const axeSource = readFileSync(a11y.resolve('axe-core/axe.min.js'), 'utf8');
const modules = join(dir, 'ts-sdk-v2', 'node_modules');
const out = option('--out');
mkdirSync(out, { recursive: true });

const HOST = 'http://host.apps.test';
const SANDBOX = 'http://sandbox.apps.test';
const hostPage = readFileSync(join(here, 'apps_host.html'), 'utf8');
const sandboxPage = readFileSync(join(here, 'apps_sandbox.html'), 'utf8');

// The CSP of the sandbox proxy, as a host builds it from `_meta.ui.csp`
// (MCP Apps, "Security Implications") with the Connected Apps rule for
// scripts: inline only, nothing from any origin unless declared.
function cspOf(csp) {
  const list = (domains) => (domains ?? []).join(' ');
  const sources = (domains, fallback) => (list(domains) || fallback);
  return [
    "default-src 'none'",
    `script-src 'unsafe-inline' ${list(csp?.resourceDomains)}`.trim(),
    `style-src 'unsafe-inline' ${list(csp?.resourceDomains)}`.trim(),
    `img-src ${sources(csp?.resourceDomains, "'none'")}`,
    `font-src ${sources(csp?.resourceDomains, "'none'")}`,
    `media-src ${sources(csp?.resourceDomains, "'none'")}`,
    `connect-src ${sources(csp?.connectDomains, "'none'")}`,
    `frame-src ${sources(csp?.frameDomains, "'none'")}`,
    "object-src 'none'",
    `base-uri ${sources(csp?.baseUriDomains, "'none'")}`,
    "form-action 'none'",
  ].join('; ');
}

const TYPES = { '.js': 'text/javascript', '.mjs': 'text/javascript', '.json': 'application/json' };

async function route(page, resource) {
  await page.route(`${HOST}/**`, async (r) => {
    const url = new URL(r.request().url());
    if (url.pathname === '/') {
      return r.fulfill({ status: 200, contentType: 'text/html', body: hostPage });
    }
    if (url.pathname.startsWith('/modules/')) {
      const path = join(modules, decodeURIComponent(url.pathname.slice('/modules/'.length)));
      if (!path.startsWith(modules)) return r.fulfill({ status: 404, body: '' });
      try {
        const ext = path.slice(path.lastIndexOf('.'));
        return r.fulfill({ status: 200, contentType: TYPES[ext] ?? 'text/plain', body: readFileSync(path) });
      } catch {
        return r.fulfill({ status: 404, body: '' });
      }
    }
    return r.fulfill({ status: 404, body: '' });
  });
  await page.route(`${SANDBOX}/**`, (r) => r.fulfill({
    status: 200,
    contentType: 'text/html',
    headers: { 'content-security-policy': cspOf(resource.csp), 'cache-control': 'no-store' },
    body: sandboxPage,
  }));
}

// Every frame reports what its CSP refused, as a console error the host sees.
const VIOLATION_WATCH = `document.addEventListener('securitypolicyviolation', (e) => {
  console.error('CSP violation: ' + e.violatedDirective + ' ' + e.blockedURI);
});`;

function viewFrame(page) {
  return page.frames().find((frame) => frame.url() === 'about:srcdoc');
}

async function waitForView(page) {
  const deadline = Date.now() + 20000;
  for (;;) {
    const frame = viewFrame(page);
    if (frame) {
      const ready = await frame.evaluate(() => document.getElementById('main')?.getAttribute('aria-busy') === 'false').catch(() => false);
      if (ready) return frame;
    }
    if (Date.now() > deadline) throw new Error('the view did not render');
    await page.waitForTimeout(50);
  }
}

async function audit(frame) {
  const small = await frame.evaluate(() => [...document.querySelectorAll('button, textarea, summary, a')]
    .map((element) => ({ element, box: element.getBoundingClientRect() }))
    .filter(({ box }) => box.width > 0 && (box.height < 44 || box.width < 44))
    .map(({ element, box }) => `${element.tagName.toLowerCase()} ${Math.round(box.width)}x${Math.round(box.height)}`));
  const overflow = await frame.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  return { small, overflow };
}

async function axe(frame) {
  await frame.evaluate(axeSource);
  const result = await frame.evaluate(() => window.axe.run(document, {
    runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'] },
  }));
  return result.violations.map((v) => ({ id: v.id, impact: v.impact, targets: v.nodes.map((n) => n.target.join(' ')) }));
}

async function pressBoard(frame, page) {
  const card = frame.locator('li[data-order-id]:has(button)').first();
  const before = {
    order_id: await card.getAttribute('data-order-id'),
    status: await card.getAttribute('data-status'),
    next: await card.locator('button').getAttribute('data-next'),
  };
  const cards = await frame.locator('li[data-order-id]').count();
  await card.locator('button').focus();
  await page.keyboard.press('Enter');
  await card.locator('.answer.ok, .answer.refused').waitFor({ timeout: 20000 });
  return {
    cards,
    ...before,
    status_after: await card.getAttribute('data-status'),
    refusal: await card.getAttribute('data-refusal'),
    answer: await card.locator('.answer').textContent(),
  };
}

async function replyTwice(frame, page, host, text) {
  host.dropNextReply = true;
  await frame.locator('#reply-text').fill(text);
  await frame.locator('#send').focus();
  await page.keyboard.press('Enter');
  await frame.locator('#sent[data-outcome="unconfirmed"]').waitFor({ timeout: 20000 });
  const first = await frame.locator('#sent').textContent();
  await frame.locator('#send').focus();
  await page.keyboard.press('Enter');
  await frame.locator('#sent[data-outcome="sent"], #sent[data-outcome="replayed"]').waitFor({ timeout: 20000 });
  return {
    text,
    first_answer: first,
    outcome: await frame.locator('#sent').getAttribute('data-outcome'),
    answer: await frame.locator('#sent').textContent(),
    shown: await frame.locator('li[data-message-id] p.body', { hasText: text }).count(),
    sends: host.sends,
  };
}

async function readChart(frame) {
  return frame.evaluate(() => ({
    bars: [...document.querySelectorAll('rect[data-start]')].map((rect) => ({
      metric: rect.closest('svg').getAttribute('data-metric'),
      start: rect.getAttribute('data-start'),
      value: Number(rect.getAttribute('data-value')),
    })),
    captions: [...document.querySelectorAll('figcaption')].map((c) => c.textContent),
    cells: [...document.querySelectorAll('tbody td')].map((c) => c.textContent),
  }));
}

async function render(browser, client, plan, tools, resources, scenario, locale, width, index) {
  const tool = tools.get(scenario.tool);
  const uri = tool?._meta?.ui?.resourceUri;
  const resource = resources.get(uri);
  if (!resource) throw new Error(`${scenario.tool} links no readable view (${uri})`);
  const tag = locale === 'fr' ? 'fr-FR' : 'en-US';
  const result = await client.callTool({ name: scenario.tool, arguments: scenario.arguments, _meta: { user_locale: tag } });
  // The browser's own language is the other one: the view must take the host's.
  const context = await browser.newContext({ viewport: { width, height: 900 }, locale: locale === 'fr' ? 'en-US' : 'fr-FR' });
  await context.addInitScript(VIOLATION_WATCH);
  const page = await context.newPage();
  const consoleErrors = [];
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(message.text());
  });
  page.on('pageerror', (error) => consoleErrors.push(`page error: ${error.message}`));
  const host = { dropNextReply: false, sends: [] };
  await page.exposeFunction('hostCallTool', async (raw) => {
    const params = JSON.parse(raw);
    try {
      const answer = await client.callTool({ ...params, _meta: { user_locale: tag } });
      if (params.name === 'chataigne_conversation_message_send') {
        host.sends.push({ idempotency_key: params.arguments?.idempotency_key, result: answer });
        if (host.dropNextReply) {
          host.dropNextReply = false;
          return JSON.stringify({ error: 'the answer was lost on the way back' });
        }
      }
      return JSON.stringify({ result: answer });
    } catch (error) {
      return JSON.stringify({ error: String(error?.message ?? error) });
    }
  });
  await route(page, resource);
  await page.goto(`${HOST}/`);
  await page.waitForFunction(() => window.hostReady === true);
  await page.evaluate((args) => window.runView(args), {
    sandboxUrl: `${SANDBOX}/proxy`,
    html: resource.text,
    csp: resource.csp,
    input: scenario.arguments,
    result,
    hostContext: { locale: tag, theme: index % 2 ? 'dark' : 'light', platform: 'web', displayMode: 'inline', containerDimensions: { maxHeight: 4000 } },
  });
  const frame = await waitForView(page);
  const entry = {
    name: plan.name,
    view: scenario.view,
    locale,
    width,
    resource_uri: uri,
    result,
    html_lang: await frame.evaluate(() => document.documentElement.lang),
    state: await frame.evaluate(() => document.getElementById('state').hidden ? null : document.getElementById('state').className),
  };
  if (scenario.view === 'board') entry.board = await pressBoard(frame, page);
  if (scenario.view === 'conversation') {
    entry.conversation = await replyTwice(frame, page, host, `${scenario.reply} (${plan.name}, ${locale}, ${width})`);
  }
  if (scenario.view === 'chart') entry.chart = await readChart(frame);
  await page.waitForTimeout(100);
  Object.assign(entry, await audit(frame));
  entry.sizes = await page.evaluate(() => window.hostLog.sizes);
  entry.initialized = await page.evaluate(() => window.hostLog.initialized);
  entry.screenshot = join(out, `${plan.name}-${scenario.view}-${locale}-${width}.png`);
  await page.screenshot({ path: entry.screenshot, fullPage: true });
  // What the page and its CSP said, before axe touches the document.
  entry.console_errors = [...consoleErrors];
  entry.csp_violations = consoleErrors.filter((text) => text.startsWith('CSP violation') || text.includes('Content Security Policy'));
  entry.axe = await axe(frame);
  await context.close();
  return entry;
}

// The same host on a copy of a view that loads an image from another
// origin: its CSP must refuse it, and the watch must report it (the check
// that a clean render's empty list means something).
async function control(browser, resource) {
  const context = await browser.newContext({ viewport: { width: 360, height: 600 } });
  await context.addInitScript(VIOLATION_WATCH);
  const page = await context.newPage();
  const errors = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  await page.exposeFunction('hostCallTool', async () => JSON.stringify({ error: 'no tools here' }));
  await route(page, resource);
  await page.goto(`${HOST}/`);
  await page.waitForFunction(() => window.hostReady === true);
  const html = resource.text.replace('<main id="main"', '<img src="https://example.com/pixel.png" alt=""><main id="main"');
  await page.evaluate((args) => window.runView(args), {
    sandboxUrl: `${SANDBOX}/proxy`,
    html,
    csp: resource.csp,
    input: {},
    result: { content: [{ type: 'text', text: 'nothing' }], isError: true },
    hostContext: { locale: 'en-US' },
  });
  await page.waitForTimeout(500);
  await context.close();
  return errors.filter((text) => text.startsWith('CSP violation') || text.includes('Content Security Policy'));
}

async function main() {
  const plan = JSON.parse(readFileSync(0, 'utf8'));
  const report = { renders: [] };
  const transport = new StreamableHTTPClientTransport(new URL(plan.url), {
    requestInit: { headers: { Authorization: `Bearer ${plan.token}` } },
  });
  const client = new Client(
    { name: 'chataigne-apps-test-host', version: '1.0.0' },
    { capabilities: { extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: ['text/html;profile=mcp-app'] } } } },
  );
  const browser = await chromium.launch({ executablePath: option('--chromium'), args: ['--no-sandbox'] });
  let code = 0;
  try {
    await client.connect(transport);
    report.server = { capabilities: client.getServerCapabilities(), version: client.getServerVersion() };
    const listed = await client.listTools();
    const tools = new Map(listed.tools.map((tool) => [tool.name, tool]));
    report.tools = listed.tools.filter((tool) => tool._meta?.ui).map((tool) => ({ name: tool.name, ui: tool._meta.ui }));
    const listedResources = await client.listResources();
    const resources = new Map();
    report.resources = [];
    for (const listedResource of listedResources.resources) {
      const read = await client.readResource({ uri: listedResource.uri });
      const content = read.contents[0];
      resources.set(listedResource.uri, { text: content.text, csp: content._meta?.ui?.csp });
      report.resources.push({
        uri: listedResource.uri,
        name: listedResource.name,
        mimeType: content.mimeType,
        listedMimeType: listedResource.mimeType,
        meta: content._meta ?? null,
        contents: read.contents.length,
        bytes: Buffer.byteLength(content.text ?? '', 'utf8'),
      });
    }
    report.control_violations = await control(browser, resources.values().next().value);
    let index = 0;
    for (const scenario of plan.views) {
      for (const locale of plan.locales) {
        for (const width of plan.widths) {
          report.renders.push(await render(browser, client, plan, tools, resources, scenario, locale, width, index));
          index += 1;
        }
      }
    }
  } catch (error) {
    report.error = `${error?.name ?? 'Error'}: ${error?.message ?? String(error)}\n${error?.stack ?? ''}`;
    code = 1;
  } finally {
    await browser.close().catch(() => {});
    await client.close().catch(() => {});
  }
  process.stdout.write(`${JSON.stringify(report)}\n`);
  process.exitCode = code;
}

await main();
