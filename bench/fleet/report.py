#!/usr/bin/env python3
"""The fleet benchmark's report: OUT/raw.json and OUT/machine.txt into
results.md (tables, ratios tattler/client-go per phase, the commands, the
machine's load) and results.json (the raw numbers and the ratios).

    report.py OUT_DIR results.md results.json
"""

import json
import sys

OUT, MD, JS = sys.argv[1], sys.argv[2], sys.argv[3]
raw = json.load(open(f"{OUT}/raw.json"))
machine = dict(l.rstrip("\n").split("=", 1) for l in open(f"{OUT}/machine.txt") if "=" in l)
V = raw["variants"]
A = raw["agents"]
T, CM, CT = "tattler", "client-go-metadata", "client-go-typed"
PEERS = [p for p in (CM, CT) if p in V]
NAMES = {T: "tattler", CM: "client-go, metadata informers (same scopes)",
         CT: "client-go, typed informers (the default agent)"}
base = raw["baseline"]
base_conns = base["memory"]["connections"]
writes_k = raw["churn_writes"] / 1000


def g(v, phase, key):
    p = V.get(v, {}).get(phase) or {}
    if key == "cpu":
        x = p.get("apiserver_cpu_s")
        return x / writes_k if phase == "churn" and x is not None else x
    if key == "cpu_net" and phase == "churn":
        return (p["apiserver_cpu_s"] - base["churn"]["apiserver_cpu_s"]) / writes_k
    if key == "rss":
        return p.get("apiserver_peak_rss_kb", 0) / 1024
    if key == "conns":
        return p.get("connections", 0) - base_conns
    if key in ("full_state", "resume"):
        # Served ones (200): a refused request (403, 429) costs the apiserver little; its own row counts it.
        x = p.get("audit", {}).get("codes", {}).get(f"{key}:200", 0)
        return x / writes_k if phase == "churn" else x
    if key == "refused":
        return sum(n for k, n in p.get("audit", {}).get("codes", {}).items() if not k.endswith(":200"))
    if key == "secs":
        return p.get("seconds_to_current")
    if key == "r429":
        return sum(n for k, n in p.get("audit", {}).get("codes", {}).items() if k.endswith(":429"))
    return None


def fmt(x, nd=2):
    if x is None:
        return "—"
    if isinstance(x, int) or (isinstance(x, float) and x.is_integer() and abs(x) >= 10):
        return f"{int(x):,}"
    return f"{x:,.{nd}f}"


def ratio(t, c):
    """tattler/client-go for a cost (lower is better); says by how much tattler is worse."""
    if t is None or c is None:
        return "—"
    if c == 0:
        return "= (0 / 0)" if t == 0 else f"{fmt(t)} vs 0: **worse**"
    r = t / c
    s = f"{r:.2f}×"
    if r > 1.005:
        s += f" (**worse by {100 * (r - 1):.0f}%**)"
    return s


ROWS = [
    ("apiserver CPU-s", "cpu", 2),
    ("apiserver peak RSS, MB", "rss", 0),
    ("TCP connections to the apiserver (agents')", "conns", 0),
    ("full states served (watch-lists, first LIST pages; HTTP 200)", "full_state", 0),
    ("resumes served (watches from a resourceVersion; HTTP 200)", "resume", 0),
    ("seconds until every agent is current", "secs", 2),
    ("requests refused (403, 429, …: by code below)", "refused", 0),
]
PHASES = [
    ("start", f"At start: {A} agents launched at once, until all four resources of every agent are Synced"),
    ("churn", "Per 1,000 writes of churn in steady state"),
    ("restart", "After an apiserver restart (`cluster.sh restart-apiserver`)"),
    ("compaction", "After a compaction that expires every agent's resourceVersion"),
]
ratios = {}
md = []
w = md.append
w("# Fleet benchmark: tattler's node agents against client-go's on one apiserver")
w("")
w(f"Written by `bench/fleet/run.sh` ({machine.get('started')} – {machine.get('finished')}, tattler "
  f"commit {machine.get('tattler_commit')}{' + uncommitted src changes' if machine.get('tattler_dirty', '0') != '0' else ''}). "
  "Do not edit by hand: `bench/fleet/report.py bench/out/fleet bench/fleet/results.md bench/fleet/results.json` "
  "rewrites it from the raw outputs.")
w("")
w("```sh")
w(machine.get("invocation", "bench/fleet/run.sh"))
w("```")
w("")
w(f"- Cluster: the tests' {machine.get('apiserver')} + etcd (`tests/k8s/cluster.sh up DIR --profiling=true "
  "--audit-policy-file=bench/fleet/audit-policy.yaml --audit-log-path=…`), "
  f"{raw['nodes']} fake Nodes (objects only), {machine.get('pods')} pods by `spec.nodeName` over them "
  f"(`bench/real/loader`, ~9.5 KB each as sent), {machine.get('services')} services, 51 namespaces; "
  "no kubelet, scheduler or controller-manager.")
w(f"- Agents: {A} processes per variant, each node `node-NNN`'s agent: its node's pods "
  "(`spec.nodeName`), its Node (`metadata.name`), cluster-wide `namespaces` and `services`; "
  "all with one ServiceAccount's token (`fleet/agent`), as a DaemonSet's pods are. tattler: "
  "`bench/fleet/agent` (the Rust API, `metadata_only` for namespaces and services, protobuf). "
  f"client-go {machine.get('client_go')}: `bench/fleet/client-go-agent`, one `rest.Config` per process "
  "(one transport: all watches on one HTTP/2 connection), protobuf; `-variant metadata` has typed "
  "informers for pods and the Node and metadata informers for namespaces and services, "
  "`-variant typed` typed informers for all four.")
wl = {v: V[v].get("open", {}).get("watch_list_client") for v in PEERS}
w(f"- client-go's WatchListClient gate: {', '.join(f'{v}: {wl[v]}' for v in PEERS)} "
  "(on by default from client-go 0.35; the audit log's `sendInitialEvents=true` watches at start confirm it).")
w(f"- Machine: {machine.get('nproc')} cores ({machine.get('cpu')}), {machine.get('mem')}, shared with "
  f"other engineers' builds: 1/5/15-minute load average {' '.join(raw['started_load'])} at the start, "
  f"{' '.join(raw.get('finished_load', ['?'] * 3))} at the end; each phase's is in results.json "
  "(`load_before`, `load_after`). The agents run on the same 2 cores as the apiserver.")
w("")
w("How each figure is taken: apiserver CPU is utime+stime of the kube-apiserver process "
  "(`/proc/PID/stat`) over the phase's window, which opens a second after a collected heap "
  "(`/debug/pprof/heap?gc=1`) and closes a second after the phase's end; across a restart it is the old "
  "process's share until its stop plus the new process's whole life. Peak RSS is VmHWM, reset "
  "(`/proc/PID/clear_refs`) as the window opens (after a restart: the new process's). Connections "
  "are established TCP connections on the apiserver's port when the window closes, less the "
  f"{base_conns} that are there with no agent (the apiserver's own loopback clients). Full states and "
  "resumes are counted from the audit log (the agents' ServiceAccount at Metadata level, one count per "
  "auditID): a watch with `sendInitialEvents=true` or a LIST without `continue` is a full state, a "
  "watch from a resourceVersion a resume. \"Current\" is when every agent has seen a marker "
  "annotation written to every Node, one pod per node, a namespace and a service at the phase's end "
  "(after the churn, or once `/readyz` answers after a restart): all four of its resources are "
  "live again. At start it is every agent's last `Synced`. The ratios are tattler/client-go in "
  "the same run; above 1 tattler costs more, and the table says by how much.")
w("")
w(f"Baseline with no agent: the apiserver idles at {base['idle_cpu_s_per_s']:.3f} CPU-s/s; the churn alone "
  f"(the writes, no watcher) costs {base['churn']['apiserver_cpu_s'] / writes_k:.2f} CPU-s per 1,000 writes; "
  f"a restart with no agent {base['restart']['apiserver_cpu_s']:.2f} CPU-s and a compaction + restart "
  f"{base['compaction']['apiserver_cpu_s']:.2f} (the new process's start, its watch caches and the markers).")
w("")
HEAD = len(md)
for phase, title in PHASES:
    w(f"## {title}")
    w("")
    cols = [T] + PEERS
    w("| | " + " | ".join(NAMES[c] for c in cols) + " | " +
      " | ".join(f"tattler / {c}" for c in PEERS) + " |")
    w("|---" * (1 + len(cols) + len(PEERS)) + "|")
    rows = list(ROWS)
    if phase == "churn":
        rows.insert(1, ("apiserver CPU-s, less the writes' own cost (baseline)", "cpu_net", 2))
        rows = [(n.replace("CPU-s", "CPU-s per 1,000 writes", 1) if k in ("cpu", "cpu_net") else
                 (n + " per 1,000 writes" if k in ("full_state", "resume") else n), k, d) for n, k, d in rows]
        rows = [r for r in rows if not (r[1] == "secs")] + [
            ("seconds until every agent saw the write after the churn", "secs", 2)]
    for name, key, nd in rows:
        vals = [g(c, phase, key) for c in cols]
        rs = [ratio(vals[0], g(p, phase, key)) for p in PEERS]
        for p, r in zip(PEERS, rs):
            ratios.setdefault(phase, {}).setdefault(p, {})[key] = (
                vals[0] / g(p, phase, key) if vals[0] is not None and g(p, phase, key) else None)
        w(f"| {name} | " + " | ".join(fmt(x, nd) for x in vals) + " | " + " | ".join(rs) + " |")
    if phase in ("restart", "compaction"):
        vals = [V[c][phase].get("seconds_down") for c in cols]
        w("| seconds from the stop to `/readyz` | " + " | ".join(fmt(x) for x in vals) + " |" +
          " |" * len(PEERS))
        vals = [V[c][phase].get("seconds_from_stop") for c in cols]
        w("| seconds from the stop until every agent is current | " + " | ".join(fmt(x) for x in vals) + " | " +
          " | ".join(ratio(vals[0], V[p][phase].get("seconds_from_stop")) for p in PEERS) + " |")
        fs = [V[c][phase]["audit"]["full_state_by_resource"] for c in cols]
        w("| full states by resource | " + " | ".join(
            ", ".join(f"{k} {n}" for k, n in sorted(f.items())) or "none" for f in fs) + " |" + " |" * len(PEERS))
        nodes = [V[c][phase]["audit"]["full_state_nodes"] for c in cols]
        w(f"| agents whose pods / Node stream made a full state (of {A}) | " + " | ".join(
            f"{n.get('pods', 0)} / {n.get('nodes', 0)}" for n in nodes) + " |" + " |" * len(PEERS))
        sd = V[T][phase].get("stats_delta", {})
        reopened = V[T][phase].get("agent_events", {}).get("reopen", 0)
        own = (f"{sd.get('streams_resynced', 0)}, {sd.get('reconnects', 0)}" if not reopened else
               f"— ({reopened} streams ended for good and were reopened by the agent: their counters start again)")
        w(f"| tattler's own count: streams re-synced (of {A * 4}), reconnects | {own} |"
          + " |" * (len(cols) - 1 + len(PEERS)))
    ev = {c: V[c][phase].get("agent_events", {}) for c in cols}
    w("")
    w("The agents' own lines in the phase (Error entries, `ended` ones, reopenings of ended resources, Synced): " + "; ".join(
        f"{c}: " + (", ".join(f"{k} {n}" for k, n in sorted(ev[c].items())) or "none") for c in cols) + ".")
    codes = {c: V[c][phase]["audit"]["codes"] for c in cols}
    w("")
    w("Audit answers by kind and HTTP code: " + "; ".join(
        f"{c}: " + ", ".join(f"{k} {n}" for k, n in sorted(codes[c].items())) for c in cols) + ".")
    w("")

w("## What each connection costs the apiserver (issue 29 item 4)")
w("")
w("At the end of each variant, after the compaction phase and 5 quiet seconds, the apiserver's memory after "
  "a GC with the fleet's idle watches open, then 5 s after the agents exited, after a GC (the same "
  "process): RSS, Go heap in use (`/debug/pprof/heap?debug=1`) and goroutines.")
w("")
w("| | connections | watches | Δ RSS | Δ heap in use | Δ goroutines | RSS per connection | heap per connection | goroutines per connection |")
w("|---|---|---|---|---|---|---|---|---|")
mem = {}
for c in [T] + PEERS:
    a, b = V[c]["memory_with"], V[c]["memory_without"]
    dc = a["connections"] - b["connections"]
    d = {"connections": dc, "watches": A * 4, "rss_kb": a["rss_kb"] - b["rss_kb"],
         "heap": (a["HeapInuse"] or 0) - (b["HeapInuse"] or 0),
         "goroutines": (a["goroutines"] or 0) - (b["goroutines"] or 0)}
    if a.get("tcp_mem_pages") is not None and b.get("tcp_mem_pages") is not None:
        d["tcp_kernel_kb"] = (a["tcp_mem_pages"] - b["tcp_mem_pages"]) * 4
    mem[c] = d
    per = lambda x: x / dc if dc else None
    w(f"| {NAMES[c]} | {dc} | {A * 4} | {d['rss_kb'] / 1024:.1f} MB | {d['heap'] / 2**20:.1f} MiB | "
      f"{d['goroutines']} | {fmt(per(d['rss_kb']), 0)} KB | {fmt(per(d['heap'] / 1024), 0)} KiB | {fmt(per(d['goroutines']), 1)} |")
w("")
if all("tcp_kernel_kb" in mem[c] for c in [T] + PEERS):
    w("Kernel memory of TCP sockets (`/proc/net/sockstat`, machine-wide, both ends of loopback; not in "
      "any RSS): " + "; ".join(f"{c}: {mem[c]['tcp_kernel_kb']:,} KB for {mem[c]['connections']} connections"
                               for c in [T] + PEERS) + ": idle sockets hold no buffers, and the "
      "difference is other work on the machine.")
    w("")
if CM in mem and mem[T]["connections"] != mem[CM]["connections"]:
    dc = mem[T]["connections"] - mem[CM]["connections"]
    mem["connection_marginal"] = {
        "rss_kb": (mem[T]["rss_kb"] - mem[CM]["rss_kb"]) / dc,
        "heap_kib": (mem[T]["heap"] - mem[CM]["heap"]) / 1024 / dc,
        "goroutines": (mem[T]["goroutines"] - mem[CM]["goroutines"]) / dc}
    m = mem["connection_marginal"]
    w(f"The same {A * 4} watches over {mem[T]['connections']} HTTP/1.1 connections (tattler) and over "
      f"{mem[CM]['connections']} HTTP/2 connections (client-go, same scopes): the difference per extra "
      f"connection is **{m['rss_kb']:.0f} KB of RSS, {m['heap_kib']:.0f} KiB of heap and "
      f"{m['goroutines']:.1f} goroutines** — what one connection costs beyond its watch. "
      "A single run on a shared machine: RSS moves by a few MB between readings, so take the "
      "figure to ±30%.")
    w("")

told = V[T]["restart"].get("told", {})
w("## What a consumer was told during the restart")
w("")
w(f"For each tattler agent and resource ({told.get('streams')} streams), from the agents' output between "
  "the apiserver's stop and the moment every agent was current again: a \"not current\" entry "
  "(any change kind the agent does not know, printed by name and number: `Stale`, 7, is being "
  "added to the library) while the server was down, and a `Synced` after it.")
w("")
w("| | restart | compaction |")
w("|---|---|---|")
tc = V[T]["compaction"].get("told", {})
for k, label in [("not_current_while_down", "streams told \"not current\" while the server was down"),
                 ("synced_after", "streams that delivered `Synced` after the stop"),
                 ("not_current_then_synced", "streams told \"not current\", then `Synced`"),
                 ("streams_with_error_while_down", "streams with an `Error` entry while down"),
                 ("error_entries_while_down", "`Error` entries while down")]:
    w(f"| {label} | {told.get(k, 0)} | {tc.get(k, 0)} |")
w(f"| change kinds the agent did not know | {told.get('kinds_seen') or 'none'} | {tc.get('kinds_seen') or 'none'} |")
w("")
if not told.get("not_current_while_down"):
    w("With this build no entry told any consumer that its resource was not current while the server was "
      "down: the stream looks the same as a quiet cluster (issue 29 item 2). The harness counts such "
      "entries as soon as the library sends them.")
    w("")
# The headline and the targets, above the per-phase tables.
head = ["## Headline", "",
        "tattler / client-go in the same run, per phase (below 1: tattler costs the apiserver less). "
        f"Values are tattler · client-go metadata informers · client-go typed informers.", "",
        "| phase | apiserver CPU-s | peak RSS, MB | connections | full states served | resumes served | s until every agent is current |",
        "|---|---|---|---|---|---|---|"]
for phase, _ in PHASES:
    cells = []
    for key, nd in (("cpu", 2), ("rss", 0), ("conns", 0), ("full_state", 1), ("resume", 1), ("secs", 1)):
        vals = [g(c, phase, key) for c in [T] + PEERS]
        rs = []
        for p in PEERS:
            c = g(p, phase, key)
            rs.append(f"{vals[0] / c:.2f}×" if c and vals[0] is not None else "—")
        cells.append(" · ".join(fmt(v, nd) for v in vals) + " (" + " · ".join(rs) + ")")
    label = {"churn": "per 1,000 writes"}.get(phase, phase)
    head.append(f"| {label} | " + " | ".join(cells) + " |")
head += ["", "(In parentheses: tattler / client-go metadata · tattler / client-go typed.)", ""]
targets = [("start", "cpu"), ("churn", "cpu"), ("restart", "cpu"), ("compaction", "cpu"),
           ("start", "rss"), ("churn", "rss"), ("restart", "rss"), ("compaction", "rss"),
           ("start", "secs"), ("restart", "secs"), ("compaction", "secs")]
head += ["### Issue 29's targets", "",
         "| target | ratio | |", "|---|---|---|"]
names = {"cpu": "apiserver CPU", "rss": "apiserver peak RSS", "secs": "seconds until every agent is current"}
target_rows = []
for phase, key in targets:
    t, c = g(T, phase, key), g(CM, phase, key) if CM in V else None
    if t is None or not c:
        continue
    r = t / c
    ok = r <= 1.0
    target_rows.append({"target": f"{names[key]} {phase} ≤ client-go metadata", "ratio": r, "met": ok})
    head.append(f"| {names[key]}, {phase}: tattler ≤ client-go metadata informers | {r:.2f}× | "
                + ("met" if ok else f"**missed by {100 * (r - 1):.0f}%**") + " |")
for phase, _ in PHASES:
    t, c = g(T, phase, "cpu"), g(CT, phase, "cpu") if CT in V else None
    if t is None or not c:
        continue
    r = t / c
    ok = r <= 0.5
    target_rows.append({"target": f"apiserver CPU {phase} ≤ 0.5 × client-go typed", "ratio": r, "met": ok})
    head.append(f"| apiserver CPU, {phase}: tattler ≤ 0.5 × client-go typed informers | {r:.2f}× | "
                + ("met" if ok else f"**missed: {r / 0.5:.2f}× the target**") + " |")
head += ["", "Where the apiserver's own work dominates a phase (the writes of the churn, a restart's start-up), "
         "the agents' share is a small part of the figure and a ratio near 1 says little; the "
         "baseline line above gives the part no agent causes.", ""]
md[HEAD:HEAD] = head
json.dump({"raw": raw, "machine": machine, "ratios": ratios, "targets": target_rows,
           "memory_per_connection": mem},
          open(JS, "w"), indent=1, default=str)
open(MD, "w").write("\n".join(md) + "\n")
