// Checks that every tool schema a server lists compiles under AJV's strict
// mode, as strict JSON Schema 2020-12 consumers (hosts, SDK validators) read
// them:
//
//   node schema_check.mjs [--clients DIR] < tools-list-result.json
//
// Input: a tools/list result, {"tools": [...]}. Each tool's inputSchema and
// outputSchema is compiled on its own by Ajv2020 (`strict: true`, with
// ajv-formats); compilation errors and whatever AJV logs as a warning are
// reported:
//
//   {"tools": N, "errors": [{"tool", "which", "error"}],
//    "warnings": [{"tool", "which", "warning"}]}
//
// DIR is where setup.sh installed the clients (default: the
// CHATAIGNE_TEST_MCP_CLIENTS environment variable); ajv comes from its
// ts-sdk folder. Exit code 0 when there is no error and no warning, 1
// otherwise, 2 when the input is not a tools/list result.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

function clientsDir() {
  const flag = process.argv.indexOf('--clients');
  const dir = flag >= 0 ? process.argv[flag + 1] : process.env.CHATAIGNE_TEST_MCP_CLIENTS;
  if (!dir) throw new Error('where the clients are installed: --clients DIR or CHATAIGNE_TEST_MCP_CLIENTS');
  return dir;
}

const require = createRequire(join(clientsDir(), 'ts-sdk', 'package.json'));
const Ajv2020 = require('ajv/dist/2020.js').default;
const addFormats = require('ajv-formats').default;

const listed = JSON.parse(readFileSync(0, 'utf8'));
if (!Array.isArray(listed?.tools)) {
  process.stderr.write('stdin is not a tools/list result ({"tools": [...]})\n');
  process.exit(2);
}

const report = { tools: listed.tools.length, errors: [], warnings: [] };
const text = (args) => args.map((a) => (typeof a === 'string' ? a : JSON.stringify(a))).join(' ');

for (const tool of listed.tools) {
  for (const which of ['inputSchema', 'outputSchema']) {
    const schema = tool[which];
    if (schema === undefined) continue;
    const where = { tool: tool.name, which };
    const logger = {
      log: () => {},
      warn: (...args) => report.warnings.push({ ...where, warning: text(args) }),
      error: (...args) => report.warnings.push({ ...where, warning: text(args) }),
    };
    // One instance per schema: schemas with the same $id must not collide.
    const ajv = new Ajv2020({ strict: true, allErrors: true, logger });
    addFormats(ajv);
    try {
      ajv.compile(schema);
    } catch (error) {
      report.errors.push({ ...where, error: error?.message ?? String(error) });
    }
  }
}

process.stdout.write(`${JSON.stringify(report)}\n`);
process.exitCode = report.errors.length || report.warnings.length ? 1 : 0;
