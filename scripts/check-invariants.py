#!/usr/bin/env python3
"""Checks invariants of ARCHITECTURE.md that code review alone lets rot.

1. Every Rust file opens with a `//!` module doc comment.
2. The tool-service's domain and storage code, and the auth-service's storage
   code, never name tonic, axum or hyper: transport stays in the adapters.
3. The tool-service's domain never names sqlx: the store maps its errors.
4. No crate depends upward: proto <- common <- services <- launcher <- tests,
   bench; the three services never depend on one another.
5. Every declared dependency is named in the code that may use it (normal
   ones in `src/` or `build.rs`, dev ones also in `tests/`, build ones in
   `build.rs`): nothing is compiled that nothing uses.
6. No table is keyed by a tool's name: a tool's static facts are declared
   on the tool (`ToolSpec::facts`); production code of the services holds no
   `const` table of tool names and compares no tool name to a literal.
7. No function takes more than one boolean: a second one is a type (an enum
   or an option) that says what it means at the call site.
8. The README stays a newcomer's page (at most 12 KB); reference material
   lives in docs/.
9. The common crate and the gateway name no restaurant concept in their
   production code (comments aside): the server instructions and the
   domain's own error codes come from the tool-service's catalogue. The
   common crate's demo tenant set and scope list are the stated exceptions.
10. What a common change touches stays what ARCHITECTURE.md says ("Change
    footprints"): for a reference instance of each kind (a read tool, a
    shared error code, a domain error code, an MCP revision), the number of
    production files whose code names it is the number in that table.
11. The gateway's modules depend one way: read from the `crate::…`,
   `super::…` and parent-to-child paths of its production code, no two
   modules depend on each other through any chain (no cycle), and no folder
   (or top-level module) names one of a higher layer of GATEWAY_LAYERS.
12. Tests do not sleep for a fixed time: code on the tokio clock is tested
    with the clock paused (`start_paused = true`, `tokio::time::pause()`),
    and a wait for anything else is `chataigne_common::testing::eventually`.
    The few sleeps that are the behaviour under test (a real timer expiring
    in a server, time passing without an effect, a stub that answers late)
    are listed in SLEEPS_UNDER_TEST with their reason.

Run by scripts/test.sh before the test suite; exits 1 listing each violation.
"""

import json
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
TRANSPORT_FREE = [
    "tool-service/src/domain",
    "tool-service/src/store",
    "auth-service/src/store",
]
TRANSPORT = re.compile(r"\b(tonic|axum|hyper)\b")
SQL_FREE = ["tool-service/src/domain"]
SQL = re.compile(r"\bsqlx\b")
README_LIMIT = 12 * 1024
RESTAURANT_FREE = ["common/src", "gateway/src"]
# Where the common crate may name the domain: the demo tenant set both
# backends seed, the scope list, and test support.
RESTAURANT_ALLOWED = {"common/src/demo.rs", "common/src/scopes.rs", "common/src/testing.rs"}
RESTAURANT = re.compile(
    r"\b(restaurants?|orders?|order_status|menus?|dish(es)?|allergens?|kitchens?|"
    r"locations?|conversations?|customers?|catalog items?|opening hours|"
    r"\w*order_status\w*|(expected|requested|current)_status)\b",
    re.I,
)
# Dependencies named only by generated code (the crate's OUT_DIR).
NAMED_BY_GENERATED_CODE = {("chataigne-proto", "prost"), ("chataigne-proto", "tonic-prost")}
LAYERS = {
    "chataigne-proto": 0,
    "chataigne-common": 1,
    "chataigne-gateway": 2,
    "chataigne-auth": 2,
    "chataigne-tools": 2,
    "chataigne": 3,
    "chataigne-tests": 4,
    "chataigne-bench": 4,
}
# The gateway's layers, lowest first: a module may name modules of its own
# folder, of its own layer, or of a lower one (ARCHITECTURE.md, `gateway/`).
GATEWAY_SRC = "gateway/src"
GATEWAY_LAYERS = [
    ["ops", "config"],
    ["wire"],
    ["reply", "endpoints", "error"],
    ["stores"],
    ["access"],
    ["backends"],
    ["state"],
    ["mcp"],
    ["edge", "server"],
]


def tracked_rust_files():
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.rs"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout
    return [ROOT / line for line in out.splitlines() if (ROOT / line).is_file()]


def module_docs(files):
    for path in files:
        lines = [l for l in path.read_text(encoding="utf-8").splitlines() if l.strip()]
        if not lines or not lines[0].startswith("//!"):
            yield f"{path.relative_to(ROOT)}: does not open with a `//!` module doc comment"


def never_named(files, prefixes, pattern, what):
    """Lines of code (comments aside) under `prefixes` that match `pattern`."""
    for path in files:
        rel = path.relative_to(ROOT).as_posix()
        if not any(rel.startswith(prefix + "/") for prefix in prefixes):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("//", 1)[0]
            if pattern.search(code):
                yield f"{rel}:{number}: {what}: {line.strip()}"


def restaurant_concepts(files):
    for path in files:
        rel = path.relative_to(ROOT).as_posix()
        if rel in RESTAURANT_ALLOWED or not any(rel.startswith(p + "/") for p in RESTAURANT_FREE):
            continue
        text = path.read_text(encoding="utf-8").split("#[cfg(test)]", 1)[0]
        for number, line in enumerate(text.splitlines(), 1):
            code = line.split("//", 1)[0]
            if RESTAURANT.search(code):
                yield (f"{rel}:{number}: a restaurant concept outside the tool-service "
                       f"(declare it in its catalogue): {line.strip()}")


# (the row's first cell in ARCHITECTURE.md, what names the reference instance)
FOOTPRINTS = [
    ("a read tool", r"discounts_list|DiscountsList|ListDiscounts"),
    ("a shared error code", r"OutputTooLarge|MCP_OUTPUT_TOO_LARGE"),
    ("a domain error code", r"ORDER_STATUS_PRECONDITION_FAILED|OrderStatusPrecondition"),
    ("an MCP revision", r"V2026_07_28|v2026_07_28|2026-07-28"),
]
PRODUCTION = re.compile(r"^(proto/|(common|gateway|auth-service|tool-service|launcher)/src/)")


def change_footprints():
    table = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard",
                          "*.rs", "*.proto"], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout.split()
    sources = [f for f in out if PRODUCTION.match(f) and not f.endswith("testing.rs")
               and (ROOT / f).is_file()]
    for kind, pattern in FOOTPRINTS:
        row = re.search(r"^\| " + re.escape(kind) + r" \| (\d+) ", table, re.M)
        if not row:
            yield f"ARCHITECTURE.md: no 'Change footprints' row for {kind}"
            continue
        named = re.compile(pattern)
        places = []
        for rel in sources:
            text = (ROOT / rel).read_text(encoding="utf-8").split("#[cfg(test)]", 1)[0]
            code = "\n".join(line.split("//", 1)[0] for line in text.splitlines())
            if named.search(code):
                places.append(rel)
        if len(places) != int(row.group(1)):
            yield (f"ARCHITECTURE.md: {kind} touches {row.group(1)} files, but its reference "
                   f"instance is named in {len(places)}: {', '.join(places)}")


def unused_dependencies(metadata):
    for package in metadata["packages"]:
        root = pathlib.Path(package["manifest_path"]).parent
        for dependency in package["dependencies"]:
            if (package["name"], dependency["name"]) in NAMED_BY_GENERATED_CODE:
                continue
            kind = dependency.get("kind")
            places = {
                None: ["src", "build.rs"],
                "dev": ["src", "build.rs", "tests", "benches", "examples"],
                "build": ["build.rs"],
            }[kind]
            files = []
            for place in places:
                path = root / place
                files += [path] if path.is_file() else sorted(path.rglob("*.rs")) if path.is_dir() else []
            name = (dependency.get("rename") or dependency["name"]).replace("-", "_")
            named = re.compile(r"\b" + re.escape(name) + r"\b")
            if not any(named.search(f.read_text(encoding="utf-8")) for f in files):
                yield (f"{package['name']}: {kind or 'normal'} dependency {dependency['name']} "
                       "is never named in its code: remove it (or move it to where it is used)")


SERVICE_SOURCES = ["gateway/src", "tool-service/src", "auth-service/src", "common/src"]
NAME_TABLE = re.compile(r"const\s+\w+\s*:\s*&\[[^=]*=\s*&\[(.*?)\n\];", re.S)
TOOL_NAME = re.compile(r'"chataigne_[a-z_]+"')
NAME_COMPARISON = re.compile(r'(==|!=)\s*(Some\()?"chataigne_[a-z_]+"|"chataigne_[a-z_]+"\s*(=>|\|)')


def tool_name_tables(files):
    for path in files:
        rel = path.relative_to(ROOT).as_posix()
        if not any(rel.startswith(prefix + "/") for prefix in SERVICE_SOURCES):
            continue
        # Production code only: a file's unit tests follow its first `#[cfg(test)]`.
        text = path.read_text(encoding="utf-8").split("#[cfg(test)]", 1)[0]
        for match in NAME_TABLE.finditer(text):
            if TOOL_NAME.search(match.group(1)):
                line = text.count("\n", 0, match.start()) + 1
                yield (f"{rel}:{line}: a table keyed by tool names: declare the fact on the "
                       "tool (ToolSpec::facts)")
        for match in NAME_COMPARISON.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            yield f"{rel}:{line}: a tool name compared to a literal: declare the fact on the tool"


FN_SIGNATURE = re.compile(r"\bfn\s+(\w+)\s*(?:<[^{;()]*?>)?\s*\(([^)]*)\)", re.S)
BOOL_PARAMETER = re.compile(r":\s*bool\b")


def boolean_parameters(files):
    for path in files:
        text = path.read_text(encoding="utf-8")
        for match in FN_SIGNATURE.finditer(text):
            if len(BOOL_PARAMETER.findall(match.group(2))) > 1:
                line = text.count("\n", 0, match.start()) + 1
                yield (f"{path.relative_to(ROOT)}:{line}: fn {match.group(1)} takes more than one "
                       "boolean: make the second a type that names its meaning")


# Test code: whole files under a `tests/` folder and the shared test support;
# elsewhere, from a file's `#[cfg(test)]` module to its end.
TEST_SUPPORT = {"common/src/testing.rs", "common/src/eventually.rs"}
SLEEP = re.compile(r"(?<![\w])(?:[\w:]*::)?sleep(?:_until)?\s*\(")
ENCLOSING_FN = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?fn\s+(\w+)")
# (file, function) -> why its sleep is the behaviour under test.
SLEEPS_UNDER_TEST = {
    ("common/src/breaker.rs", "probed"): "the stub of a probe that answers late (paused clock)",
    ("common/src/grpc_deadline.rs", "call"): "the stub of a slow service the deadline cuts",
    ("tool-service/src/grpc/database_gate.rs", "call"):
        "the stub of a call holding its pooled connection",
    ("tool-service/src/tools/deadline.rs", "work_past_the_deadline_is_stopped"):
        "the slow work the deadline stops",
    ("common/src/eventually.rs", "eventually_some_every"): "the shared poll",
    ("common/src/eventually.rs", "eventually_blocking"): "the shared poll",
    ("auth-service/src/http/stack.rs", "app"):
        "the slow route the request timeout cuts (run on the paused clock)",
    ("common/src/grpc_server.rs", "call"):
        "the slow service the load shedding refuses beside (run on the paused clock)",
    ("common/src/grpc_health.rs", "the_overall_status_follows_the_probe_and_liveness_does_not"):
        "probes passing without a change, on a served port",
    ("common/tests/balance.rs", "calls_spread_evenly_and_a_stopped_instance_costs_at_most_one_call"):
        "a stopped server closes its connections on its side, with nothing to poll",
    ("common/tests/internal_tls.rs", "a_certificate_replaced_on_disk_serves_the_next_connection"):
        "a later modification time on the replaced files",
    ("common/tests/internal_tls.rs", "a_rotation_caught_half_written_is_loaded_once_complete"):
        "a later modification time on the replaced files",
    ("gateway/src/access/rate_limit.rs", "exact_across_two_gateways"):
        "the window passing in Redis",
    ("gateway/src/backends/catalog.rs", "failed_refreshes_keep_the_last_known_write_switch"):
        "the retry delay passing, fetched or not, from a served port",
    ("gateway/tests/behaviour/connections.rs",
     "a_thousand_half_open_connections_are_closed_within_the_timeouts_while_normal_requests_answer"):
        "the pace of normal traffic during a flood, and a bounded wait it may end short",
    ("gateway/tests/behaviour/connections.rs", "the_connection_caps_close_new_connections_at_once"):
        "a connection accepted by the server, which the client cannot see",
    ("gateway/tests/support/mod.rs", "authenticate"): "the stub of a slow auth-service",
    ("gateway/tests/support/mod.rs", "call_tool"): "the stub of a slow tool-service",
    ("launcher/tests/embedded/sigterm.rs",
     "sigterm_lets_the_embedded_binary_finish_an_in_flight_call_and_exit_zero"):
        "a write waiting on SQLite's lock, which shows no waiter to poll for",
    ("tests/tests/authorization/live_idempotency.rs", "scenario"):
        "a running write that shows no sign of being in flight",
    ("tests/tests/edge_under_attack.rs", "normal_traffic"): "the pace of normal traffic",
    ("tests/tests/exactly_once.rs", "duplicate_of_a_running_write"):
        "a running write that shows no sign of being in flight",
    ("tests/tests/exactly_once.rs", "gateway_crash_mid_write"):
        "a write that keeps waiting; SQLite shows no waiter to poll for",
    ("tests/tests/exactly_once.rs", "embedded_write_past_its_deadline_is_unknown_then_happens_once"):
        "time passing without an effect",
    ("tests/tests/exactly_once.rs", "embedded_keys_replay_until_they_expire"):
        "a record's time to live passing",
    ("tests/tests/operations/startup_retry.rs",
     "the_tool_service_waits_for_a_database_that_comes_up_late_then_serves"):
        "start-up retries going on past several attempts",
    ("tests/tests/outages.rs", "auth_and_tool_service_outages_are_dependency_errors_and_recover"):
        "the catalogue's TTL passing in the gateway",
    ("tests/tests/outages.rs", "postgres_known_down"): "the catalogue's TTL passing in the gateway",
    ("tests/tests/servers/graceful_shutdown.rs",
     "an_in_flight_call_finishes_while_the_stack_shuts_down"):
        "a call waiting on through the shutdown",
}


def test_lines(path, rel):
    """(number, line) of the test code of `path`."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if "tests" in rel.split("/")[:-1] or rel in TEST_SUPPORT:
        start = 0
    else:
        start = next((i for i, l in enumerate(lines) if l.strip() == "#[cfg(test)]"), None)
        if start is None:
            return lines, []
    return lines, range(start, len(lines))


def sleeps_in_tests(files):
    """Fixed sleeps of test code that runs on the real clock, unlisted."""
    seen = set()
    for path in files:
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("bench/"):
            continue
        lines, numbers = test_lines(path, rel)
        for i in numbers:
            code = lines[i].split("//", 1)[0]
            if not SLEEP.search(code) or re.search(r"\bfn\s+sleep", code):
                continue
            j = i
            while j >= 0 and not ENCLOSING_FN.match(lines[j]):
                j -= 1
            name = ENCLOSING_FN.match(lines[j]).group(1) if j >= 0 else "?"
            k, attributes = j - 1, []
            while k >= 0 and lines[k].strip().startswith(("#[", "///")):
                attributes.append(lines[k])
                k -= 1
            paused = any(
                a.strip().startswith("#[") and "start_paused = true" in a for a in attributes
            ) or any("time::pause()" in l for l in lines[j:i])
            if paused:
                continue
            if (rel, name) in SLEEPS_UNDER_TEST:
                seen.add((rel, name))
                continue
            yield (f"{rel}:{i + 1}: a fixed sleep in a test on the real clock ({name}): pause "
                   "the tokio clock, or wait with chataigne_common::testing::eventually")
    for rel, name in sorted(set(SLEEPS_UNDER_TEST) - seen):
        yield f"SLEEPS_UNDER_TEST lists {rel} {name}, which no longer sleeps: drop it"


def readme_size():
    size = len((ROOT / "README.md").read_bytes())
    if size > README_LIMIT:
        yield f"README.md: {size} bytes, over {README_LIMIT}: move reference material to docs/"


def workspace_metadata():
    return json.loads(subprocess.run(
        ["cargo", "metadata", "--no-deps", "--format-version", "1", "--offline"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout)


def layering(metadata):
    for package in metadata["packages"]:
        name = package["name"]
        if name not in LAYERS:
            yield f"{name}: a workspace crate without a layer in scripts/check-invariants.py"
            continue
        for dependency in package["dependencies"]:
            target = dependency["name"]
            if target in LAYERS and dependency.get("kind") != "dev" and LAYERS[target] >= LAYERS[name]:
                yield f"{name} depends on {target}: a crate may only depend on lower layers"


CRATE_PATH = re.compile(r"\bcrate::((?:\w+::)*\w+)")
CRATE_GROUP = re.compile(r"\buse\s+crate::\{(.*?)\};", re.S)
SUPER_PATH = re.compile(r"\bsuper::((?:\w+::)*\w+)")
CHILD_MODULE = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", re.M)


def module_graph(src):
    """{module: set(modules it names)} for the production code under `src`
    (module = path without `.rs`, `mod.rs` naming its folder; the crate
    root is left out: it only declares and re-exports)."""
    files = {}
    for path in sorted(src.rglob("*.rs")):
        rel = path.relative_to(src).with_suffix("").as_posix()
        module = rel[: -len("/mod")] if rel.endswith("/mod") else rel
        if module in ("lib", "main"):
            continue
        files[module] = path

    def resolve(dotted):
        parts = dotted.split("::")
        for end in range(len(parts), 0, -1):
            candidate = "/".join(parts[:end])
            if candidate in files:
                return candidate
        return None

    graph = {}
    for module, path in files.items():
        text = path.read_text(encoding="utf-8").split("#[cfg(test)]", 1)[0]
        code = "\n".join(line.split("//", 1)[0] for line in text.splitlines())
        named = set()
        for group in CRATE_GROUP.finditer(code):
            for item in re.split(r",(?![^{]*\})", group.group(1)):
                item = re.sub(r"\s+", "", item).split("::{")[0].strip(":")
                if item:
                    named.add(resolve(item.replace("::self", "")))
        for match in CRATE_PATH.finditer(code):
            named.add(resolve(match.group(1)))
        parent = module.rsplit("/", 1)[0] if "/" in module else ""
        base = module if path.name == "mod.rs" else parent
        base_parent = base.rsplit("/", 1)[0] if "/" in base else ""
        for match in SUPER_PATH.finditer(code):
            prefix = base_parent.replace("/", "::")
            named.add(resolve(f"{prefix}::{match.group(1)}" if prefix else match.group(1)))
        # A folder's module naming its own child module (`child::item`).
        if path.name == "mod.rs":
            for child in CHILD_MODULE.findall(code):
                if re.search(r"\b" + child + r"::", code.split(f"mod {child}", 1)[1]):
                    named.add(f"{module}/{child}")
        named.discard(None)
        named.discard(module)
        graph[module] = named
    return graph


def cycles(graph):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def gateway_layering():
    graph = module_graph(ROOT / GATEWAY_SRC)
    layer_of = {unit: rank for rank, units in enumerate(GATEWAY_LAYERS) for unit in units}
    for module, named in sorted(graph.items()):
        unit = module.split("/")[0]
        if unit not in layer_of:
            yield f"{GATEWAY_SRC}/{module}: a module outside GATEWAY_LAYERS in scripts/check-invariants.py"
            continue
        for target in sorted(named):
            target_unit = target.split("/")[0]
            if target_unit != unit and layer_of.get(target_unit, -1) > layer_of[unit]:
                yield (f"{GATEWAY_SRC}/{module} names {target}: an upward edge "
                       f"({unit} is below {target_unit} in GATEWAY_LAYERS)")
    for component in cycles(graph):
        yield f"{GATEWAY_SRC}: a module cycle: {' -> '.join(component)}"


def main():
    files = tracked_rust_files()
    metadata = workspace_metadata()
    problems = [
        *module_docs(files),
        *never_named(files, TRANSPORT_FREE, TRANSPORT,
                     "transport crate named in domain/storage code"),
        *never_named(files, SQL_FREE, SQL, "SQL driver named in domain code"),
        *boolean_parameters(files),
        *restaurant_concepts(files),
        *change_footprints(),
        *tool_name_tables(files),
        *layering(metadata),
        *gateway_layering(),
        *unused_dependencies(metadata),
        *readme_size(),
        *sleeps_in_tests(files),
    ]
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"{len(problems)} architecture invariant(s) broken", file=sys.stderr)
        return 1
    print("architecture invariants hold", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
