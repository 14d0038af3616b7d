// Runs a plan of MCP tool calls through the MCP Inspector's command line, one
// Inspector process per request, as a person trying a server from a shell
// would:
//
//   node inspector_session.mjs [--clients DIR] < plan.json > report.json
//
// The plan and the report are those of sdk_session.py (see its
// documentation), plus the plan option "inspector": "v2" (default: the
// Inspector 2, `inspector --cli`) or "v1" (the deprecated inspector-cli 1.x).
// Per session: `--method tools/list` once, then `--method tools/call` for each
// step, with "${STEP:/pointer}" arguments resolved as sdk_session.py does.
// Each call is reported with "result" (the CallToolResult the Inspector
// printed, also when it has isError, for which Inspector 2 exits with 5) or
// "error" (its error output, when it printed no result), plus:
//
//   "sent_arguments"  the arguments of the tools/call request as they went
//                     on the wire (the Inspector converts string values to
//                     the types of the tool's inputSchema; see below)
//   "rpc_error"       the JSON-RPC error the server answered, if any
//
// Both are read from a wire log that inject-headers.mjs (preloaded with
// --import) writes; the session's "protocolVersion" and "serverInfo" come from
// the initialize exchange in that log. The Inspector offers only its own
// protocol version: a plan with "protocolVersion" is refused.
//
// Arguments: v2 passes them with --tool-args-json, v1 as --tool-arg
// key=<JSON value> (which 1.x parses as JSON), so numbers, booleans, arrays
// and objects keep their types. Both lines then convert every *string* value
// to the type the tool's inputSchema declares for it (Number("many") is NaN,
// sent as null): a string cannot be sent where the schema says integer,
// number or boolean (2.x also for ["integer", "null"] and the like; 1.x only
// for a plain "type": "integer").
//
// DIR is where setup.sh installed the clients (default: the
// CHATAIGNE_TEST_MCP_CLIENTS environment variable); run with its Node 22.
// Exit code 0 when every session ran, 1 when tools/list failed.

import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REFERENCE = /^\$\{([A-Za-z0-9_-]+):(\/[^}]*)\}$/;
const PRELOAD = fileURLToPath(new URL('./inject-headers.mjs', import.meta.url));

function clientsDir() {
  const flag = process.argv.indexOf('--clients');
  const dir = flag >= 0 ? process.argv[flag + 1] : process.env.CHATAIGNE_TEST_MCP_CLIENTS;
  if (!dir) throw new Error('where the clients are installed: --clients DIR or CHATAIGNE_TEST_MCP_CLIENTS');
  return dir;
}

function pointer(document, path) {
  let current = document;
  for (const raw of path.split('/').slice(1)) {
    const token = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (current === null || typeof current !== 'object' || !(token in current)) {
      throw new Error(`${path} is absent`);
    }
    current = current[token];
  }
  return current;
}

function resolve(value, documents) {
  if (Array.isArray(value)) return value.map((v) => resolve(v, documents));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolve(v, documents)]));
  }
  if (typeof value === 'string') {
    const match = REFERENCE.exec(value);
    if (match) {
      const [, step, path] = match;
      if (!(step in documents)) throw new Error(`no result of step '${step}' to resolve ${value}`);
      try {
        return pointer(documents[step], path);
      } catch {
        throw new Error(`${value} does not resolve in the result of '${step}'`);
      }
    }
  }
  return value;
}

function referenceDocument(result) {
  if (result?.structuredContent != null) return result.structuredContent;
  for (const block of result?.content ?? []) {
    if (block.type !== 'text') continue;
    try {
      const parsed = JSON.parse(block.text);
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) && 'data' in parsed) {
        return parsed;
      }
    } catch {
      // not JSON: the summary line
    }
  }
  return undefined;
}

function parseJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

// How to start each Inspector line, and how to read what it prints.
function inspectorLine(dir, line) {
  if (line === 'v1') {
    const build = join(dir, 'inspector-v1/node_modules/@modelcontextprotocol/inspector-cli/build');
    return {
      name: `@modelcontextprotocol/inspector-cli ${packageVersion(join(build, '..'))}`,
      // 1.x reads its package.json relative to the working directory.
      cwd: build,
      command: [join(build, 'index.js')],
      callArguments: (args) => {
        const pairs = Object.entries(args).map(([key, value]) => `${key}=${JSON.stringify(value)}`);
        return pairs.length ? ['--tool-arg', ...pairs] : [];
      },
      output: (stdout) => parseJson(stdout),
      resultOf: (run) => (run.status === 0 ? callResult(parseJson(run.stdout)) : undefined),
      errorText: (stderr) => stderr.trim(),
    };
  }
  const root = join(dir, 'inspector/node_modules/@modelcontextprotocol/inspector');
  return {
    name: `@modelcontextprotocol/inspector ${packageVersion(root)}`,
    cwd: undefined,
    command: [join(root, 'clients/launcher/build/index.js'), '--cli'],
    callArguments: (args) => ['--tool-args-json', JSON.stringify(args)],
    extra: ['--format', 'json'],
    output: (stdout) => parseJson(stdout)?.result,
    // Exit code 5: the result has isError (printed all the same).
    resultOf: (run) => (run.status === 0 || run.status === 5 ? callResult(parseJson(run.stdout)?.result) : undefined),
    errorText: (stderr) => {
      const envelope = stderr
        .split('\n')
        .map(parseJson)
        .find((line) => line?.error);
      return envelope ? envelope.error.message : stderr.trim();
    },
  };
}

function callResult(value) {
  return value !== null && typeof value === 'object' && Array.isArray(value.content) ? value : undefined;
}

function packageVersion(dir) {
  return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).version;
}

// Runs one Inspector command; returns its outcome and the JSON-RPC exchange.
function inspect(context, method, rest) {
  const { inspector, plan, token, home } = context;
  const wireLog = join(home, 'wire.log');
  rmSync(wireLog, { force: true });
  const args = [
    '--import',
    PRELOAD,
    ...inspector.command,
    plan.url,
    '--transport',
    'http',
    '--header',
    `Authorization: Bearer ${token}`,
    '--method',
    method,
    ...rest,
    ...(inspector.extra ?? []),
  ];
  const run = spawnSync(process.execPath, args, {
    cwd: inspector.cwd,
    encoding: 'utf8',
    timeout: Number(plan.timeout ?? 60) * 1000,
    maxBuffer: 64 * 1024 * 1024,
    env: {
      ...process.env,
      HOME: home,
      CHATAIGNE_INJECT_ORIGIN: new URL(plan.url).origin,
      CHATAIGNE_INJECT_HEADERS: '{}',
      CHATAIGNE_WIRE_LOG: wireLog,
    },
  });
  const wire = existsSync(wireLog)
    ? readFileSync(wireLog, 'utf8').split('\n').filter(Boolean).map(parseJson).filter(Boolean)
    : [];
  return { run, wire };
}

// The response the wire log holds for the request `method`, and that request.
function exchange(wire, method) {
  const request = wire.find((entry) => entry.dir === '>' && entry.body?.method === method);
  if (!request) return {};
  const response = wire.find(
    (entry) => entry.dir === '<' && entry.body && entry.body.id === request.body.id && !entry.body.method,
  );
  return { request: request.body, response: response?.body };
}

function runSession(context, sessionPlan, report) {
  const listing = inspect(context, 'tools/list', []);
  const init = exchange(listing.wire, 'initialize').response?.result;
  report.protocolVersion = init?.protocolVersion;
  report.serverInfo = init?.serverInfo;
  const listed = context.inspector.output(listing.run.stdout);
  if (listing.run.status !== 0 || !Array.isArray(listed?.tools)) {
    throw new Error(
      `tools/list failed (exit ${listing.run.status ?? listing.run.signal}): ${context.inspector.errorText(listing.run.stderr ?? '')}`,
    );
  }
  report.tools = listed.tools;
  const documents = {};
  for (const step of sessionPlan.steps ?? []) {
    const call = { id: step.id, tool: step.tool };
    report.calls.push(call);
    let args;
    try {
      args = resolve(step.arguments ?? {}, documents);
    } catch (error) {
      call.error = `Error: ${error.message}`;
      continue;
    }
    call.arguments = args;
    const { run, wire } = inspect(context, 'tools/call', [
      '--tool-name',
      step.tool,
      ...context.inspector.callArguments(args),
    ]);
    const { request, response } = exchange(wire, 'tools/call');
    if (request) call.sent_arguments = request.params?.arguments ?? {};
    if (response?.error) call.rpc_error = response.error;
    const result = context.inspector.resultOf(run);
    if (result) {
      call.result = result;
      const document = referenceDocument(result);
      if (document !== undefined) documents[step.id] = document;
    } else {
      const why = run.error ? run.error.message : context.inspector.errorText(run.stderr ?? '');
      call.error = `exit ${run.status ?? run.signal}: ${why || 'no output'}`;
    }
  }
}

function main() {
  const dir = clientsDir();
  const plan = JSON.parse(readFileSync(0, 'utf8'));
  const inspector = inspectorLine(dir, plan.inspector ?? 'v2');
  const out = { sdk: inspector.name, sessions: [] };
  if (plan.protocolVersion) {
    out.error = `the Inspector offers only its own protocol version, not ${plan.protocolVersion}`;
    process.stdout.write(`${JSON.stringify(out)}\n`);
    return 1;
  }
  // The Inspector keeps a catalog and secrets under HOME: a throw-away one.
  const home = mkdtempSync(join(tmpdir(), 'chataigne-inspector-'));
  let code = 0;
  try {
    for (const sessionPlan of plan.sessions) {
      const report = { name: sessionPlan.name, calls: [] };
      out.sessions.push(report);
      runSession({ inspector, plan, token: sessionPlan.token, home }, sessionPlan, report);
    }
  } catch (error) {
    out.error = `${error.name}: ${error.message}`;
    code = 1;
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
  process.stdout.write(`${JSON.stringify(out)}\n`);
  return code;
}

process.exitCode = main();
