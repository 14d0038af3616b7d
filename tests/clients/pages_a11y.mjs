// The accessibility check of the authorization server's pages: in the
// system's Chromium (playwright-core), at each width and in each language,
// opens the sign-in page, fails a sign-in (wrong password), signs in to the
// consent page, switches account (the signed-out page) and opens an error
// page; on each, runs axe-core and measures the touch targets, the focus ring
// and the e-mail kept after the failure; saves a screenshot of each.
//
//   node pages_a11y.mjs [--clients DIR] --chromium PATH --out DIR
//        AUTHORIZE_URL ERROR_URL EMAIL PASSWORD > report.json
//
// Report: [{"lang", "width", "page", "html_lang", "violations": [{"id",
// "impact", "targets"}], "small_targets": [...], "focus_outline", "email_kept"}].
// DIR is where setup.sh installed the clients (default: the
// CHATAIGNE_TEST_MCP_CLIENTS environment variable). Exit code 1 on a failure
// to drive the pages (not on violations: the caller judges the report).

import { readFileSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

function option(name) {
  const at = process.argv.indexOf(name);
  return at >= 0 ? process.argv[at + 1] : undefined;
}

function positional() {
  const out = [];
  for (let i = 2; i < process.argv.length; i += 1) {
    if (process.argv[i].startsWith('--')) { i += 1; continue; }
    out.push(process.argv[i]);
  }
  return out;
}

const dir = option('--clients') ?? process.env.CHATAIGNE_TEST_MCP_CLIENTS;
if (!dir) throw new Error('where the clients are installed: --clients DIR or CHATAIGNE_TEST_MCP_CLIENTS');
const require = createRequire(join(dir, 'a11y', 'package.json'));
const { chromium } = require('playwright-core');
const axeSource = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

const [authorizeUrl, errorUrl, email, password] = positional();
const out = option('--out');
mkdirSync(out, { recursive: true });

// axe, touch targets and the focus ring on the current page.
async function audit(page, lang, width, name, extra = {}) {
  await page.evaluate(axeSource);
  const result = await page.evaluate(() => window.axe.run(document, {
    runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'] },
  }));
  const small = await page.evaluate(() => [...document.querySelectorAll('button, input:not([type=hidden]), a')]
    .map((element) => ({ element, box: element.getBoundingClientRect() }))
    .filter(({ box }) => box.height < 44 || box.width < 44)
    .map(({ element, box }) => `${element.tagName.toLowerCase()}#${element.id} ${Math.round(box.width)}x${Math.round(box.height)}`));
  await page.keyboard.press('Tab');
  const focusOutline = await page.evaluate(() => {
    const active = document.activeElement;
    if (!active || active === document.body) return null;
    const style = getComputedStyle(active);
    return `${style.outlineStyle} ${style.outlineWidth}`;
  });
  await page.screenshot({ path: join(out, `${name}-${lang}-${width}.png`), fullPage: true });
  return {
    lang,
    width,
    page: name,
    html_lang: await page.getAttribute('html', 'lang'),
    violations: result.violations.map((v) => ({ id: v.id, impact: v.impact, targets: v.nodes.map((n) => n.target.join(' ')) })),
    small_targets: small,
    focus_outline: focusOutline,
    ...extra,
  };
}

async function main() {
  const browser = await chromium.launch({ executablePath: option('--chromium'), args: ['--no-sandbox'] });
  const report = [];
  try {
    for (const [lang, locale] of [['fr', 'fr-FR'], ['en', 'en-US']]) {
      for (const width of [360, 1280]) {
        const context = await browser.newContext({ locale, viewport: { width, height: 800 }, bypassCSP: true });
        const page = await context.newPage();
        await page.goto(authorizeUrl);
        report.push(await audit(page, lang, width, 'sign-in'));
        await page.fill('#email', email);
        await page.fill('#password', 'not-the-password');
        await page.click('#sign-in-button');
        await page.waitForSelector('#error p');
        const kept = await page.inputValue('#email');
        report.push(await audit(page, lang, width, 'wrong-password', { email_kept: kept === email }));
        await page.fill('#password', password);
        await page.click('#sign-in-button');
        await page.waitForSelector('#approve');
        report.push(await audit(page, lang, width, 'consent'));
        await page.click('#switch-account');
        await page.waitForSelector('#sign-in');
        report.push(await audit(page, lang, width, 'signed-out'));
        await page.goto(errorUrl);
        report.push(await audit(page, lang, width, 'error'));
        await context.close();
      }
    }
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(report));
}

main().catch((error) => {
  process.stderr.write(`${error.stack ?? error}\n`);
  process.exit(1);
});
