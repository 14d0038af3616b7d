#!/usr/bin/env bash
# Runs the server scenarios of the official MCP conformance suite
# (@modelcontextprotocol/conformance) against an MCP endpoint, one scenario
# per run, and prints one line per scenario and a summary:
#
#   PASS   tools-list                 checks: 3 ok, 0 failed, 0 warnings
#   XFAIL  prompts-list               checks: 0 ok, 1 failed, 0 warnings
#   expected failures: 1 (prompts-list)
#   conformance: N passed, M failed
#
# usage: conformance.sh URL [--token T] [-H 'Name: value']...
#          [--suite required|generic|all] [--scenario NAME]...
#          [--engine alpha|stable] [--spec V] [--xfail NAME]...
#          [--clients DIR] [--keep DIR] [--verbose]
#
#   --token T      sends 'Authorization: Bearer T' (also -H, repeatable)
#   --suite        required (default): the requirement set of --spec (alpha:
#                  its frozen `--requirements` list; stable: the scenarios of
#                  --spec less the two the suite itself marks pending);
#                  generic: the scenarios that need no fixture of the SDK's
#                  reference server; all: every server scenario of --spec
#   --scenario     runs these scenarios instead of a suite
#   --engine       alpha (default, 0.2.x: also validates every message against
#                  the JSON schema of --spec) or stable (0.1.x)
#   --spec V       protocol revision (default 2025-11-25)
#   --xfail NAME   a scenario expected to fail: reported XFAIL, not counted as
#                  failed (and XPASS, counted as passed, if it passes)
#   --clients DIR  where setup.sh installed the clients (default
#                  $CHATAIGNE_TEST_MCP_CLIENTS)
#   --keep DIR     keeps each scenario's checks.json and log under DIR
#   --verbose      prints every failed or warning check, not only those of
#                  unexpected failures
#
# The suite has no option for HTTP headers: they are added by preloading
# inject-headers.mjs, which wraps fetch and undici for the URL's origin.
# Exit code: 0 when no scenario failed unexpectedly, 1 otherwise, 2 on usage
# or installation errors.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
url="" suite=required engine=alpha spec=2025-11-25 keep="" verbose=0
clients="${CHATAIGNE_TEST_MCP_CLIENTS:-}"
headers=() scenarios=() xfail=()

usage() { echo "conformance.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --token) headers+=("Authorization: Bearer $2"); shift 2 ;;
    -H | --header) headers+=("$2"); shift 2 ;;
    --suite) suite="$2"; shift 2 ;;
    --scenario) scenarios+=("$2"); shift 2 ;;
    --engine) engine="$2"; shift 2 ;;
    --spec) spec="$2"; shift 2 ;;
    --xfail) xfail+=("$2"); shift 2 ;;
    --clients) clients="$2"; shift 2 ;;
    --keep) keep="$2"; shift 2 ;;
    --verbose) verbose=1; shift ;;
    -h | --help) sed -n '2,/^set /p' "$0" | sed '$d'; exit 0 ;;
    -*) usage "unknown option $1" ;;
    *) [ -z "$url" ] || usage "unexpected argument $1"; url="$1"; shift ;;
  esac
done
[ -n "$url" ] || usage "the MCP endpoint URL is required (see --help)"
[ -n "$clients" ] || usage "--clients DIR or CHATAIGNE_TEST_MCP_CLIENTS is required"

node="$clients/node22/node"
case "$engine" in
  alpha) package="$clients/conformance-alpha" ;;
  stable) package="$clients/conformance" ;;
  *) usage "--engine is alpha or stable" ;;
esac
suite_js="$package/node_modules/@modelcontextprotocol/conformance/dist/index.js"
[ -x "$node" ] && [ -f "$suite_js" ] || usage "the suite is not installed in $clients (run setup.sh)"

# Headers, as the JSON object the preload reads.
header_json="{}"
for header in "${headers[@]}"; do
  header_json="$("$node" -e '
    const [json, line] = process.argv.slice(1);
    const at = line.indexOf(":");
    if (at < 1) { console.error(`not a header: ${line}`); process.exit(2); }
    const all = JSON.parse(json);
    all[line.slice(0, at).trim()] = line.slice(at + 1).trim();
    console.log(JSON.stringify(all));' "$header_json" "$header")" || exit 2
done
origin="$("$node" -e 'console.log(new URL(process.argv[1]).origin)' "$url")" || usage "not a URL: $url"

spec_options=()
[ "$engine" = alpha ] && spec_options=(--spec-version "$spec")

list_scenarios() {
  "$node" "$suite_js" list --server "$@" 2>/dev/null |
    sed -n '/^Server scenarios/,/^$/s/^  - \([a-z0-9-]*\).*/\1/p'
}

if [ "${#scenarios[@]}" -eq 0 ]; then
  case "$suite" in
    generic)
      scenarios=(server-initialize ping tools-list server-sse-multiple-streams dns-rebinding-protection)
      [ "$engine" = alpha ] && scenarios+=(server-session-lifecycle) ;;
    required)
      if [ "$engine" = alpha ]; then
        mapfile -t scenarios < <(list_scenarios --requirements "$spec")
      else
        # 0.1.x has no requirement sets: its active suite is the scenarios of
        # the revision less those it keeps pending.
        mapfile -t scenarios < <(list_scenarios --spec-version "$spec" |
          grep -vx -e json-schema-2020-12 -e server-sse-polling)
      fi ;;
    all) mapfile -t scenarios < <(list_scenarios --spec-version "$spec") ;;
    *) usage "--suite is required, generic or all" ;;
  esac
  [ "${#scenarios[@]}" -gt 0 ] || usage "the $engine suite listed no scenario for $suite $spec"
fi

out="$keep"
[ -n "$out" ] || out="$(mktemp -d "${TMPDIR:-/tmp}/conformance.XXXXXX")"
mkdir -p "$out"
for scenario in "${scenarios[@]}"; do
  dir="$out/$scenario"
  rm -rf "$dir"
  mkdir -p "$dir"
  (cd "$dir" &&
    CHATAIGNE_INJECT_ORIGIN="$origin" CHATAIGNE_INJECT_HEADERS="$header_json" \
      timeout 180 "$node" --import "$here/inject-headers.mjs" "$suite_js" server \
      --url "$url" --scenario "$scenario" -o "$dir" "${spec_options[@]}") >"$dir/run.log" 2>&1
done

"$node" - "$out" "$verbose" "${scenarios[@]}" -- "${xfail[@]}" <<'EOF'
const { readdirSync, readFileSync, existsSync } = require('node:fs');
const { join } = require('node:path');
const [out, verbose, ...rest] = process.argv.slice(2);
const split = rest.indexOf('--');
const scenarios = rest.slice(0, split);
const expected = new Set(rest.slice(split + 1));

function checksOf(dir) {
  const run = readdirSync(dir).find((name) => existsSync(join(dir, name, 'checks.json')));
  return run ? JSON.parse(readFileSync(join(dir, run, 'checks.json'), 'utf8')) : null;
}

let passed = 0, failed = 0;
const xfailed = [];
for (const scenario of scenarios) {
  const checks = checksOf(join(out, scenario));
  const count = (status) => (checks ?? []).filter((c) => c.status === status).length;
  const ok = count('SUCCESS'), bad = checks ? count('FAILURE') : 1, warn = count('WARNING');
  let verdict;
  if (bad === 0) {
    verdict = expected.has(scenario) ? 'XPASS' : ok > 0 ? 'PASS' : 'PASS*';
    passed += 1;
  } else if (expected.has(scenario)) {
    verdict = 'XFAIL';
    xfailed.push(scenario);
  } else {
    verdict = 'FAIL';
    failed += 1;
  }
  console.log(`${verdict.padEnd(6)} ${scenario.padEnd(40)} checks: ${ok} ok, ${bad} failed, ${warn} warnings`);
  if (verbose === '1' || verdict === 'FAIL') {
    if (!checks) console.log(`         no checks.json: the scenario did not run (see ${scenario}/run.log)`);
    for (const check of checks ?? []) {
      if (check.status === 'FAILURE' || check.status === 'WARNING') {
        const why = (check.errorMessage ?? check.description ?? '').replace(/\s+/g, ' ').slice(0, 240);
        console.log(`         ${check.status} ${check.id}: ${why}`);
      }
    }
  }
}
if (xfailed.length) console.log(`expected failures: ${xfailed.length} (${xfailed.join(', ')})`);
console.log(`conformance: ${passed} passed, ${failed} failed`);
process.exitCode = failed ? 1 : 0;
EOF
status=$?
[ -n "$keep" ] || rm -rf "$out"
exit "$status"
