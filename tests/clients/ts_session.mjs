// Runs a plan of MCP tool calls with the official TypeScript SDK
// (@modelcontextprotocol/sdk: Client over StreamableHTTPClientTransport), or
// with its v2 client (@modelcontextprotocol/client, `--sdk v2`) in its auto
// mode, which speaks 2026-07-28 where the server does and the handshake of
// earlier versions elsewhere:
//
//   node ts_session.mjs [--clients DIR] [--sdk v1|v2] < plan.json > report.json
//
// With `"resources": true` in the plan, each session also lists the
// resources and reads each one: the report's "resources" holds, per
// resource, {uri, name, mimeType, contents: [{uri, mimeType, bytes, _meta}]}.
//
// The plan and the report are those of sdk_session.py (see its
// documentation): per session, initialize (offering the plan's
// "protocolVersion" when set), tools/list, then every step in order, with
// "${STEP:/pointer}" arguments resolved in the structuredContent of an earlier
// result, else in the JSON payload of its first text block holding a "data"
// member.
//
// The SDK validates each result against the tool's listed outputSchema: a
// structuredContent that does not match throws McpError -32602, and a tool
// with an outputSchema that returns no structuredContent (and no isError)
// throws -32600. Those throws are what this driver exists to surface: every
// call that throws is reported with "error" (the message, with its code) and,
// when the server answered a JSON-RPC error, "rpc_error" {code, message, data}
// as sent; the script goes on with the next step.
//
// DIR is where setup.sh installed the clients (default: the
// CHATAIGNE_TEST_MCP_CLIENTS environment variable); run with its Node 22.
// Exit code 0 when every session ran, 1 on a transport or protocol failure.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const REFERENCE = /^\$\{([A-Za-z0-9_-]+):(\/[^}]*)\}$/;

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

// What "${STEP:/pointer}" resolves in: structuredContent, else a JSON text payload.
function referenceDocument(result) {
  if (result.structuredContent != null) return result.structuredContent;
  for (const block of result.content ?? []) {
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

function errorText(error) {
  return `${error?.name ?? 'Error'}: ${error?.message ?? String(error)}`;
}

async function runSession(sdk, plan, sessionPlan, report) {
  const timeout = Number(plan.timeout ?? 60) * 1000;
  const offered = plan.protocolVersion;
  const transport = new sdk.StreamableHTTPClientTransport(new URL(plan.url), {
    requestInit: { headers: { Authorization: `Bearer ${sessionPlan.token}` } },
  });
  // Offer the planned protocol version: rewrite the initialize request as it
  // leaves (the SDK always offers its newest).
  if (offered) {
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
      if (message.method === 'initialize') {
        message = { ...message, params: { ...message.params, protocolVersion: offered } };
      }
      return send(message, options);
    };
  }
  // Keep the last JSON-RPC error the server answered, to report it as sent.
  let lastRpcError = null;
  transport.onmessage = (message) => {
    if (message && typeof message === 'object' && 'error' in message && 'id' in message) {
      lastRpcError = message.error;
    }
  };

  // The v2 client probes `server/discover` first (its auto mode): 2026-07-28
  // where the server speaks it, the 2025 handshake otherwise.
  const options = sdk.v2 ? { capabilities: {}, versionNegotiation: { mode: 'auto' } } : { capabilities: {} };
  const client = new sdk.Client({ name: 'chataigne-tests', version: '1.0.0' }, options);
  try {
    await client.connect(transport, { timeout });
    const negotiated = sdk.v2 ? client.getNegotiatedProtocolVersion() : transport.protocolVersion;
    report.protocolVersion = negotiated;
    report.serverInfo = client.getServerVersion();
    if (offered && negotiated !== offered) {
      throw new Error(`offered protocol ${offered}, the server answered ${negotiated}`);
    }
    const listed = await client.listTools(undefined, { timeout });
    report.tools = listed.tools;
    if (plan.resources) {
      report.capabilities = client.getServerCapabilities();
      const resources = await client.listResources(undefined, { timeout });
      report.resources = [];
      for (const resource of resources.resources) {
        const read = await client.readResource({ uri: resource.uri }, { timeout });
        report.resources.push({
          uri: resource.uri,
          name: resource.name,
          mimeType: resource.mimeType,
          contents: read.contents.map((content) => ({
            uri: content.uri,
            mimeType: content.mimeType,
            bytes: Buffer.byteLength(content.text ?? '', 'utf8'),
            _meta: content._meta ?? null,
          })),
        });
      }
    }
    const documents = {};
    for (const step of sessionPlan.steps ?? []) {
      const call = { id: step.id, tool: step.tool };
      report.calls.push(call);
      lastRpcError = null;
      try {
        const args = resolve(step.arguments ?? {}, documents);
        call.arguments = args;
        const result = await client.callTool({ name: step.tool, arguments: args }, undefined, { timeout });
        call.result = result;
        const document = referenceDocument(result);
        if (document !== undefined) documents[step.id] = document;
      } catch (error) {
        call.error = errorText(error);
        if (typeof error?.code === 'number') call.error_code = error.code;
        if (lastRpcError) call.rpc_error = lastRpcError;
      }
    }
  } finally {
    await client.close().catch(() => {});
  }
}

function loadSdk() {
  const flag = process.argv.indexOf('--sdk');
  const line = flag >= 0 ? process.argv[flag + 1] : 'v1';
  if (line === 'v2') {
    const dir = join(clientsDir(), 'ts-sdk-v2');
    const require = createRequire(join(dir, 'package.json'));
    const { Client, StreamableHTTPClientTransport } = require('@modelcontextprotocol/client');
    const version = JSON.parse(
      readFileSync(join(dir, 'node_modules/@modelcontextprotocol/client/package.json'), 'utf8'),
    ).version;
    return { Client, StreamableHTTPClientTransport, v2: true, name: `@modelcontextprotocol/client ${version}` };
  }
  const dir = join(clientsDir(), 'ts-sdk');
  const require = createRequire(join(dir, 'package.json'));
  const version = JSON.parse(
    readFileSync(join(dir, 'node_modules/@modelcontextprotocol/sdk/package.json'), 'utf8'),
  ).version;
  return {
    Client: require('@modelcontextprotocol/sdk/client/index.js').Client,
    StreamableHTTPClientTransport: require('@modelcontextprotocol/sdk/client/streamableHttp.js')
      .StreamableHTTPClientTransport,
    name: `@modelcontextprotocol/sdk ${version}`,
  };
}

async function main() {
  const sdk = loadSdk();
  const plan = JSON.parse(readFileSync(0, 'utf8'));
  const out = { sdk: sdk.name, sessions: [] };
  let code = 0;
  try {
    for (const sessionPlan of plan.sessions) {
      const report = { name: sessionPlan.name, calls: [] };
      out.sessions.push(report);
      await runSession(sdk, plan, sessionPlan, report);
    }
  } catch (error) {
    out.error = errorText(error);
    code = 1;
  }
  process.stdout.write(`${JSON.stringify(out)}\n`);
  process.exitCode = code;
}

await main();
