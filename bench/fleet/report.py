#!/usr/bin/env python3
"""The fleet benchmark's report: one or more runs' OUT/raw.json and
OUT/machine.txt into results.md (tables, ratios tattler/client-go per phase,
the commands, the machine's load) and results.json (the numbers and the ratios).

    report.py OUT_DIR [OUT_DIR ...] results.md results.json

With several runs each figure is the median over the runs and, in brackets,
its range (min–max); a ratio is the median of the runs' own ratios (tattler
and client-go measured in the same run, minutes apart). Runs of the same size
(agents, nodes, pods) are aggregated together; the size with the most runs
comes first, and each other size gets its own section (e.g. 300 agents).
"""

import json
import re
import os
import statistics
import sys

if len(sys.argv) < 4:
    raise SystemExit(__doc__)
OUTS, MD, JS = sys.argv[1:-2], sys.argv[-2], sys.argv[-1]
T, CM, CT = "tattler", "client-go-metadata", "client-go-typed"
NAMES = {T: "tattler", CM: "client-go, metadata informers (same scopes)",
         CT: "client-go, typed informers (the default agent)"}
SHORT = {T: "tattler", CM: "client-go metadata", CT: "client-go typed"}


def load(out):
    raw = json.load(open(os.path.join(out, "raw.json")))
    machine = dict(l.rstrip("\n").split("=", 1) for l in open(os.path.join(out, "machine.txt")) if "=" in l)
    return {"dir": out, "raw": raw, "machine": machine, "name": os.path.basename(os.path.normpath(out))}


RUNS = [load(o) for o in OUTS]


# ---------------------------------------------------------------- one run's figures

def g(run, v, phase, key):
    """One figure of one run: variant v (or "baseline"), phase, key."""
    raw = run["raw"]
    writes_k = raw["churn_writes"] / 1000
    base = raw["baseline"]
    p = (base.get(phase) if v == "baseline" else raw["variants"].get(v, {}).get(phase)) or {}
    if not p:
        return None
    a = p.get("audit", {})
    if key == "cpu":
        x = p.get("apiserver_cpu_s")
        return x / writes_k if phase == "churn" and x is not None else x
    if key == "cpu_net":
        b = base.get(phase, {}).get("apiserver_cpu_s")
        if p.get("apiserver_cpu_s") is None or b is None:
            return None
        x = p["apiserver_cpu_s"] - b
        return x / writes_k if phase == "churn" else x
    if key == "rss":
        return p.get("apiserver_peak_rss_kb", 0) / 1024
    if key == "conns":
        return p.get("connections", 0) - base["memory"]["connections"]
    if key in ("full_state", "resume"):
        # Served ones (200): a refused request (403, 429) costs the apiserver little; its own row counts it.
        x = a.get("codes", {}).get(f"{key}:200", 0)
        return x / writes_k if phase == "churn" else x
    if key == "requests":
        return a.get("requests")
    if key == "refused":
        return sum(n for k, n in a.get("codes", {}).items() if not k.endswith(":200"))
    if key == "secs":
        return p.get("seconds_to_current")
    if key == "secs_from_stop":
        return p.get("seconds_from_stop")
    if key == "secs_down":
        return p.get("seconds_down")
    if key == "missing":
        return p.get("agents_missing")
    syns = p.get("syns", {})
    if key.startswith("syn:"):  # syn:PART:FIELD, e.g. syn:down:attempts_per_agent_per_min
        _, part, field = key.split(":")
        return syns.get(part, {}).get(field)
    if key == "accepted_net":
        # Connections the apiserver accepted in the phase, less those it accepts with no
        # agent in the same phase (the harness's /readyz polls and markers, its own loopback client).
        x = syns.get("window", {}).get("accepted")
        b = base.get(phase, {}).get("syns", {}).get("window", {}).get("accepted")
        return None if x is None or b is None else max(0, x - b)
    if key in ("tls_cpu", "tls_cpu_low", "tls_share", "tls_share_low"):
        tls = base.get("tls")
        conns, cpu = g(run, v, phase, "accepted_net"), g(run, v, phase, "cpu")
        if not tls or conns is None or not cpu:
            return None
        full = max(tls["full_handshake_cpu_ms"], 0)
        resumed = min(full, max(tls["resumed_handshake_cpu_ms"], 0))
        if key.endswith("_low") and v == T:
            # A new apiserver process has new ticket keys: at least each agent's first
            # connection is a full handshake; the rest may resume (rustls keeps the
            # session cache per client configuration; client-go's Go client keeps none).
            a = raw["agents"]
            secs = (min(conns, a) * full + max(0, conns - a) * resumed) / 1000
        else:
            secs = conns * full / 1000
        return secs if key.startswith("tls_cpu") else secs / cpu
    return None


def ratio_of(run, phase, key, peer):
    t, c = g(run, T, phase, key), g(run, peer, phase, key)
    if t is None or c is None or c == 0:
        return None
    return t / c


# ---------------------------------------------------------------- aggregation

def agg(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


def fmt(x, nd=2):
    if x is None:
        return "—"
    if isinstance(x, int) or (isinstance(x, float) and x.is_integer() and abs(x) >= 10):
        return f"{int(x):,}"
    return f"{x:,.{nd}f}"


def cell(a, nd=2, unit=""):
    """median [min–max], or the one value."""
    if a is None:
        return "—"
    if a["n"] == 1 or a["min"] == a["max"]:
        return fmt(a["median"], nd) + unit
    return f"{fmt(a['median'], nd)}{unit} [{fmt(a['min'], nd)}–{fmt(a['max'], nd)}]"


def rcell(a):
    """A ratio tattler/client-go: median [range], and by how much tattler is worse."""
    if a is None:
        return "—"
    s = f"{a['median']:.2f}×"
    if a["n"] > 1 and a["min"] != a["max"]:
        s += f" [{a['min']:.2f}–{a['max']:.2f}]"
    if a["median"] > 1.005:
        s += f" (**worse by {100 * (a['median'] - 1):.0f}%**)"
    return s


class Group:
    """Runs of one size."""

    def __init__(self, runs):
        self.runs = runs
        r0 = runs[0]["raw"]
        self.A, self.nodes, self.pods = r0["agents"], r0["nodes"], runs[0]["machine"].get("pods")
        vs = set.intersection(*(set(r["raw"]["variants"]) for r in runs))
        self.variants = [v for v in (T, CM, CT) if v in vs]
        self.peers = [p for p in (CM, CT) if p in self.variants]
        self.phases = [ph for ph in ("start", "churn", "restart", "compaction", "outage")
                       if all(ph in r["raw"]["variants"].get(T, {}) for r in runs)]

    def a(self, v, phase, key):
        return agg([g(r, v, phase, key) for r in self.runs])

    def ra(self, phase, key, peer):
        return agg([ratio_of(r, phase, key, peer) for r in self.runs])

    def rows_json(self):
        out = {}
        for ph in self.phases:
            for key in ("cpu", "rss", "conns", "full_state", "resume", "secs", "refused",
                        "accepted_net", "tls_cpu", "tls_share", "tls_share_low", "syn:down:attempts_per_agent_per_min"):
                for v in self.variants + ["baseline"]:
                    x = self.a(v, ph, key)
                    if x is not None:
                        out.setdefault(ph, {}).setdefault(key, {})[v] = x
                for p in self.peers:
                    x = self.ra(ph, key, p)
                    if x is not None:
                        out[ph][key][f"tattler/{p}"] = x
        return out


groups = {}
for r in RUNS:
    groups.setdefault((r["raw"]["agents"], r["raw"]["nodes"], r["machine"].get("pods")), []).append(r)
GROUPS = sorted((Group(rs) for rs in groups.values()), key=lambda gr: (-len(gr.runs), gr.A))
MAIN = GROUPS[0]

md = []
w = md.append


def runs_said(gr):
    n = len(gr.runs)
    return "one run" if n == 1 else f"{n} runs, median [min–max] over the runs"


# ---------------------------------------------------------------- the header

def commits(gr):
    cs = []
    for r in gr.runs:
        m = r["machine"]
        c = m.get("tattler_commit", "?") + (" + uncommitted src changes" if m.get("tattler_dirty", "0") != "0" else "")
        if c not in cs:
            cs.append(c)
    return ", ".join(cs)


m0 = MAIN.runs[0]["machine"]
w("# Fleet benchmark: tattler's node agents against client-go's on one apiserver")
w("")
w(f"Written by `bench/fleet/report.py` from {len(RUNS)} run{'s' if len(RUNS) > 1 else ''} of `bench/fleet/run.sh` "
  f"({min(r['machine'].get('started', '') for r in RUNS)} – {max(r['machine'].get('finished', '') for r in RUNS)}); "
  f"the agents built from tattler commit {commits(MAIN)} (`bench/target/release/BUILT_AT`). Do not edit by hand: "
  f"`bench/fleet/report.py {' '.join(os.path.relpath(r['dir'], os.getcwd()) if os.path.isabs(r['dir']) else r['dir'] for r in RUNS)} "
  "bench/fleet/results.md bench/fleet/results.json` rewrites it from the raw outputs.")
w("")
w("```sh")
_k8s = re.search(r"v(\d+\.\d+)", m0.get("apiserver", "") or "")
w(f"export TATTLER_K8S_VERSION={_k8s.group(1) if _k8s else '1.37'}   # the version tests/k8s/build.sh builds (or TATTLER_K8S_BIN: its binaries)")
for r in RUNS:
    w(r["machine"].get("invocation", "bench/fleet/run.sh"))
w("```")
w("")
w(f"- Cluster: the tests' {m0.get('apiserver')} + etcd (`tests/k8s/cluster.sh up DIR --profiling=true "
  "--audit-policy-file=bench/fleet/audit-policy.yaml --audit-log-path=…`), "
  f"{MAIN.nodes} fake Nodes (objects only), {MAIN.pods} pods by `spec.nodeName` over them "
  f"(`bench/real/loader`, ~9.5 KB each as sent), {m0.get('services')} services, 51 namespaces; "
  "no kubelet, scheduler or controller-manager.")
w(f"- Agents: {MAIN.A} processes per variant, each node `node-NNN`'s agent: its node's pods "
  "(`spec.nodeName`), its Node (`metadata.name`), cluster-wide `namespaces` and `services`; "
  "all with one ServiceAccount's token (`fleet/agent`), as a DaemonSet's pods are. tattler: "
  "`bench/fleet/agent` (the Rust API, `metadata_only` for namespaces and services, protobuf; one "
  "HTTP/1.1 connection per stream). "
  f"client-go {m0.get('client_go')}: `bench/fleet/client-go-agent`, one `rest.Config` per process "
  "(one transport: all watches on one HTTP/2 connection), protobuf; `-variant metadata` has typed "
  "informers for pods and the Node and metadata informers for namespaces and services, "
  "`-variant typed` typed informers for all four.")
wl = {v: MAIN.runs[0]["raw"]["variants"][v].get("open", {}).get("watch_list_client") for v in MAIN.peers}
w(f"- client-go's WatchListClient gate: {', '.join(f'{v}: {wl[v]}' for v in MAIN.peers)} "
  "(on by default from client-go 0.35; the audit log's `sendInitialEvents=true` watches at start confirm it).")
w(f"- Machine: {m0.get('nproc')} cores ({m0.get('cpu')}), {m0.get('mem')}, {m0.get('kernel')}, shared with "
  "another engineer's builds (niced); the agents run on the same 2 cores as the apiserver. The load "
  "averages of every run and phase are in [the last section](#load-averages).")
w("")
w("How each figure is taken: apiserver CPU is utime+stime of the kube-apiserver process "
  "(`/proc/PID/stat`) over the phase's window, which opens a second after a collected heap "
  "(`/debug/pprof/heap?gc=1`) and closes a second after the phase's end; across a restart it is the old "
  "process's share until its stop plus the new process's whole life. Peak RSS is VmHWM, reset "
  "(`/proc/PID/clear_refs`) as the window opens (after a restart: the new process's). Connections "
  "are established TCP connections on the apiserver's port when the window closes, less those "
  "there with no agent (the apiserver's own loopback client). Full states and "
  "resumes are counted from the audit log (the agents' ServiceAccount at Metadata level, one count per "
  "auditID): a watch with `sendInitialEvents=true` or a LIST without `continue` is a full state, a "
  "watch from a resourceVersion a resume. \"Current\" is when every agent has seen a marker "
  "annotation written to every Node, one pod per node, a namespace and a service at the phase's end "
  "(after the churn, or once `/readyz` answers after a restart): all four of its resources are "
  "live again. At start it is every agent's last `Synced`. Connection attempts are TCP SYNs to the "
  "apiserver's port and accepted connections its SYN-ACKs, counted on `lo` by an AF_PACKET raw socket "
  f"with a BPF filter (`fleet.py`, class `Syns`; counter: {MAIN.runs[0]['raw'].get('syn_counter', '?')}): it "
  "only watches, so nothing the agents do changes. The ratios are tattler/client-go in "
  "the same run; above 1 tattler costs more, and the table says by how much.")
w("")


def OUTAGE_S(gr):
    xs = {r["raw"]["variants"][T].get("outage", {}).get("outage_s") for r in gr.runs}
    xs.discard(None)
    return fmt(xs.pop(), 0) if len(xs) == 1 else "?"


def baseline_line(gr):
    b = lambda ph: cell(agg([r["raw"]["baseline"].get(ph, {}).get("apiserver_cpu_s") for r in gr.runs]))
    churn = cell(agg([r["raw"]["baseline"]["churn"]["apiserver_cpu_s"] / (r["raw"]["churn_writes"] / 1000)
                      for r in gr.runs]))
    idle = cell(agg([r["raw"]["baseline"]["idle_cpu_s_per_s"] for r in gr.runs]), 3)
    s = (f"Baseline with no agent ({runs_said(gr)}): the apiserver idles at {idle} CPU-s/s; the churn alone "
         f"(the writes, no watcher) costs {churn} CPU-s per 1,000 writes; a restart with no agent {b('restart')} "
         f"CPU-s and a compaction + restart {b('compaction')}")
    if all("outage" in r["raw"]["baseline"] for r in gr.runs):
        s += f", a {OUTAGE_S(gr)} s outage and start {b('outage')}"
    return s + " (the new process's start, its watch caches and the markers)."


w(baseline_line(MAIN))
w("")


# ---------------------------------------------------------------- the headline

def headline(gr, title):
    w(title)
    w("")
    w(f"{runs_said(gr)}; tattler / client-go ratios are the median [range] of each run's own ratio. "
      "Values are tattler · client-go metadata informers · client-go typed informers.")
    w("")
    w("| phase | apiserver CPU-s | CPU, tattler / metadata · / typed | full states served | "
      "resumes served | s from `/readyz` until every agent is current | s, tattler / metadata · / typed |")
    w("|---|---|---|---|---|---|---|")
    for ph in gr.phases:
        label = {"churn": "per 1,000 writes", "outage": f"outage ({OUTAGE_S(gr)} s down)"}.get(ph, ph)
        vals = lambda key, nd: " · ".join(cell(gr.a(v, ph, key), nd) for v in gr.variants)
        rats = lambda key: " · ".join(rcell(gr.ra(ph, key, p)) for p in gr.peers)
        w(f"| {label} | {vals('cpu', 2)} | {rats('cpu')} | {vals('full_state', 0)} | {vals('resume', 0)} | "
          f"{vals('secs', 1)} | {rats('secs')} |")
    w("")
    w("At start the seconds are from the launch to every agent's last `Synced`; after the churn, from the "
      "marker write. Full states and resumes per 1,000 writes in the churn row.")
    w("")


headline(MAIN, f"## Headline: {MAIN.A} agents")


def outage_section(gr, title):
    if "outage" not in gr.phases:
        return
    w(title)
    w("")
    w(f"The apiserver stopped (`cluster.sh stop-apiserver`: SIGTERM, its graceful shutdown), {OUTAGE_S(gr)} s "
      "with nothing listening on its port (etcd keeps running), then started (`cluster.sh start-apiserver`, "
      "until `/readyz`). While it is down no request reaches it (the audit log has none): what the agents "
      "ask for is TCP connections, each refused at once (RST). Counted on `lo` (SYNs to the port; "
      f"{runs_said(gr)}):")
    w("")
    cols = gr.variants
    w("| | " + " | ".join(NAMES[c] for c in cols) + " | " + " | ".join(f"tattler / {c}" for c in gr.peers) + " |")
    w("|---" * (1 + len(cols) + len(gr.peers)) + "|")
    rows = [
        (f"connection attempts in the {OUTAGE_S(gr)} s down, fleet", "syn:down:attempts", 0),
        ("connection attempts per second, fleet", "syn:down:attempts_per_s", 1),
        ("**connection attempts per agent per minute**", "syn:down:attempts_per_agent_per_min", 1),
        ("connections accepted while down (must be 0)", "syn:down:accepted", 0),
        ("seconds of the graceful stop (SIGTERM until the process is gone)", "syn:stopping:seconds", 1),
        ("connection attempts during the graceful stop", "syn:stopping:attempts", 0),
        ("seconds from the start until `/readyz`", "syn:starting:seconds", 1),
        ("connection attempts from the start until `/readyz`", "syn:starting:attempts", 0),
        ("connections accepted from `/readyz` until every agent is current", "syn:after_ready:accepted", 0),
        ("s from `/readyz` until every agent is current", "secs", 1),
        ("full states served after the start", "full_state", 0),
        ("resumes served after the start", "resume", 0),
        ("requests refused (403, 429, …)", "refused", 0),
        ("apiserver CPU-s over the phase (stop, down, start, catch-up)", "cpu", 2),
    ]
    for name, key, nd in rows:
        vals = [gr.a(c, "outage", key) for c in cols]
        w(f"| {name} | " + " | ".join(cell(x, nd) for x in vals) + " | " +
          " | ".join(rcell(gr.ra("outage", key, p)) for p in gr.peers) + " |")
    w("")
    # The shape: attempts per 10 s of the outage, per agent per minute.
    w("Connection attempts per agent per minute in each 10 s of the outage (median over the runs), the shape of "
      "each fleet's backoff:")
    w("")
    nb = max(len(r["raw"]["variants"][T]["outage"]["syns"]["down"].get("attempts_by_bucket", [])) for r in gr.runs)
    w("| | " + " | ".join(f"{10 * i}–{10 * (i + 1)} s" for i in range(nb)) + " |")
    w("|---" * (1 + nb) + "|")
    for c in cols:
        cells = []
        for i in range(nb):
            xs = []
            for r in gr.runs:
                d = r["raw"]["variants"][c]["outage"]["syns"]["down"]
                hb = d.get("attempts_by_bucket", [])
                if i < len(hb):
                    xs.append(hb[i] / gr.A * 6)
            cells.append(cell(agg(xs), 1))
        w(f"| {SHORT[c]} | " + " | ".join(cells) + " |")
    w("")
    b = agg([r["raw"]["baseline"].get("outage", {}).get("syns", {}).get("down", {}).get("attempts") for r in gr.runs])
    w(f"With no agent the same {OUTAGE_S(gr)} s see {cell(b, 0)} attempts (the counter's control). "
      "Issue 36 asks that tattler's rate be no more than client-go's" +
      (":" if gr.peers else "; no client-go fleet was measured at this size."))
    for p in gr.peers:
        ra = gr.ra("outage", "syn:down:attempts_per_agent_per_min", p)
        if ra:
            w(f"- against {NAMES[p]}: {rcell(ra)}, " + ("**met**" if ra["median"] <= 1 else "**not met**") +
              (f" in {sum(1 for r in gr.runs if (ratio_of(r, 'outage', 'syn:down:attempts_per_agent_per_min', p) or 0) <= 1)} "
               f"of {len(gr.runs)} runs" if len(gr.runs) > 1 else "") + ".")
    w("")


outage_section(MAIN, f"## The {OUTAGE_S(MAIN)} s outage: what the agents ask for while the apiserver is down")


def tls_section(gr, title):
    tl = [r["raw"]["baseline"].get("tls") for r in gr.runs]
    if not all(tl):
        return
    w(title)
    w("")
    full = agg([t["full_handshake_cpu_ms"] for t in tl])
    res = agg([t["resumed_handshake_cpu_ms"] for t in tl])
    w(f"In the baseline (no agent), `fleet.py`'s `tls_probe` makes {tl[0]['n']:,} authenticated GETs "
      f"(`{tl[0]['path']}` with the agents' token) three ways, twice in turn: on {tl[0]['n']:,} fresh "
      f"connections (a full handshake each, {tl[0].get('tls_version')}, {tl[0].get('cipher')}, the "
      "apiserver's RSA-2048 certificate), on as many connections resuming one TLS session (a ticket), and on "
      "one kept-alive connection. The apiserver's CPU difference per connection is what a connection "
      f"costs beyond its request: **{cell(full, 3)} ms for a full handshake**, {cell(res, 3)} ms resumed "
      f"({runs_said(gr)}; 10 ms clock ticks over ~{fmt(agg([t['fresh_cpu_s'] for t in tl])['median'], 1)} CPU-s "
      "per kind give ±0.01 ms: a spread between runs is the shared machine's).")
    w("")
    w("The restart phase's connections: SYN-ACKs from the apiserver's port over the phase (the stop until every "
      "agent is current), less those of the same phase with no agent (the harness's `/readyz` polls and "
      "markers). A restarted apiserver has new session-ticket keys, so no ticket from before the stop "
      "resumes; after its first handshake a tattler agent may resume (rustls keeps a session cache per "
      "client configuration), client-go's Go client keeps no session cache (no `ClientSessionCache` in "
      "client-go's transport) and always makes a full handshake. Hence two bounds for tattler: every "
      "connection a full handshake, or the first per agent full and the rest resumed.")
    w("")
    cols = gr.variants
    w("| | " + " | ".join(NAMES[c] for c in cols) + " | " + " | ".join(f"tattler / {c}" for c in gr.peers) + " |")
    w("|---" * (1 + len(cols) + len(gr.peers)) + "|")
    for ph in ("restart", "compaction", "outage"):
        if ph not in gr.phases:
            continue
        for name, key, nd, unit in ((f"{ph}: connections accepted (agents')", "accepted_net", 0, ""),
                                    (f"{ph}: apiserver CPU-s", "cpu", 2, ""),
                                    (f"{ph}: handshakes' CPU-s, all full", "tls_cpu", 2, ""),
                                    (f"**{ph}: handshakes' share of the apiserver CPU, all full (upper bound)**", "tls_share", 3, ""),
                                    (f"{ph}: same, tattler's after the first per agent resumed (lower bound)", "tls_share_low", 3, "")):
            vals = [gr.a(c, ph, key) for c in cols]
            if key.startswith("tls_share"):
                cs = [("—" if x is None else (f"{100 * x['median']:.1f}%" + (
                    f" [{100 * x['min']:.1f}–{100 * x['max']:.1f}%]" if x["n"] > 1 and x["min"] != x["max"] else "")))
                      for x in vals]
            else:
                cs = [cell(x, nd) for x in vals]
            w(f"| {name} | " + " | ".join(cs) + " | " + " | ".join(rcell(gr.ra(ph, key, p)) for p in gr.peers) + " |")
    w("")


tls_section(MAIN, "## TLS handshakes: their share of the restart phase's apiserver CPU (issue 36 item 5)")


# ---------------------------------------------------------------- issue targets

def targets(gr):
    rows = []
    w("### Issue 36's and issue 29's targets (medians)")
    w("")
    w("| target | tattler | client-go | ratio (median [range]) | |")
    w("|---|---|---|---|---|")

    def row(label, phase, key, peer, limit=1.0, nd=2):
        t, c, ra = gr.a(T, phase, key), gr.a(peer, phase, key), gr.ra(phase, key, peer)
        if t is None or c is None:
            return
        r = ra["median"] if ra else (t["median"] / c["median"] if c["median"] else None)
        if r is None:
            return
        ok = r <= limit
        runs_met = sum(1 for x in gr.runs if (ratio_of(x, phase, key, peer) or 0) <= limit)
        rows.append({"target": label, "ratio": r, "met": ok, "runs_met": runs_met, "runs": len(gr.runs)})
        w(f"| {label} | {cell(t, nd)} | {cell(c, nd)} | {rcell(ra) if ra else f'{r:.2f}×'} | "
          + ("met" if ok else f"**missed** ({r / limit:.2f}× the target)")
          + (f", {runs_met} of {len(gr.runs)} runs" if len(gr.runs) > 1 else "") + " |")

    for ph in ("restart", "compaction"):
        row(f"36.3 apiserver CPU, {ph} ≤ client-go metadata", ph, "cpu", CM)
    for ph in ("restart", "compaction"):
        row(f"36.2 s from `/readyz` until current, {ph} ≤ client-go typed", ph, "secs", CT, nd=1)
    row("36.3 apiserver CPU, start ≤ client-go metadata", "start", "cpu", CM)
    row("36.4 connection attempts per agent while down ≤ client-go metadata", "outage",
        "syn:down:attempts_per_agent_per_min", CM, nd=1)
    row("36.4 connection attempts per agent while down ≤ client-go typed", "outage",
        "syn:down:attempts_per_agent_per_min", CT, nd=1)
    for ph in ("restart", "compaction", "outage"):
        fs = gr.a(T, ph, "full_state")
        if fs:
            ok = fs["max"] <= gr.A * 4
            rows.append({"target": f"36.1 full states {ph} ≤ one per stream", "value": fs, "met": ok})
            w(f"| 36.1 full states served, {ph} ≤ one per stream ({gr.A * 4}) | {cell(fs, 0)} | | | "
              + ("met in every run" if ok else "**missed**") + " |")
    for ph in ("start", "churn"):
        row(f"29 apiserver CPU, {ph} ≤ client-go metadata", ph, "cpu", CM)
    for ph in ("start", "churn", "restart", "compaction"):
        row(f"29 apiserver peak RSS, {ph} ≤ client-go metadata", ph, "rss", CM, nd=0)
    for ph in ("start", "churn", "restart", "compaction"):
        row(f"29 apiserver CPU, {ph} ≤ 0.5 × client-go typed", ph, "cpu", CT, limit=0.5)
    w("")
    w("Where the apiserver's own work dominates a phase (the writes of the churn, a restart's start-up), "
      "the agents' share is a small part of the figure and a ratio near 1 says little; the "
      "baseline line above gives the part no agent causes.")
    w("")
    return rows


target_rows = targets(MAIN)


# ---------------------------------------------------------------- per-phase tables

ROWS = [
    ("apiserver CPU-s", "cpu", 2),
    ("apiserver CPU-s less the same phase with no agent", "cpu_net", 2),
    ("apiserver peak RSS, MB", "rss", 0),
    ("TCP connections to the apiserver (agents')", "conns", 0),
    ("full states served (watch-lists, first LIST pages; HTTP 200)", "full_state", 0),
    ("resumes served (watches from a resourceVersion; HTTP 200)", "resume", 0),
    ("seconds until every agent is current", "secs", 2),
    ("requests refused (403, 429, …: by code below)", "refused", 0),
    ("agents not current when the phase gave up (WAIT)", "missing", 0),
]
PHASES = {
    "start": "At start: {A} agents launched at once, until all four resources of every agent are Synced",
    "churn": "Per 1,000 writes of churn in steady state",
    "restart": "After an apiserver restart (`cluster.sh restart-apiserver`)",
    "compaction": "After a compaction that expires every agent's resourceVersion",
    "outage": "After a {O} s outage (`cluster.sh stop-apiserver`, {O} s, `start-apiserver`)",
}


def phase_tables(gr):
    for ph in gr.phases:
        w(f"### {PHASES[ph].format(A=gr.A, O=OUTAGE_S(gr))}")
        w("")
        cols = gr.variants
        w("| | " + " | ".join(NAMES[c] for c in cols) + " | " + " | ".join(f"tattler / {c}" for c in gr.peers) + " |")
        w("|---" * (1 + len(cols) + len(gr.peers)) + "|")
        rows = list(ROWS)
        if ph == "start":
            rows = [r for r in rows if r[1] != "cpu_net"]
        if ph == "churn":
            rows = [(n.replace("CPU-s", "CPU-s per 1,000 writes", 1) if k in ("cpu", "cpu_net") else
                     (n + " per 1,000 writes" if k in ("full_state", "resume") else n), k, d) for n, k, d in rows]
            rows = [r for r in rows if r[1] != "secs"] + [("seconds until every agent saw the write after the churn", "secs", 2)]
        if ph in ("restart", "compaction", "outage"):
            rows += [("seconds from the stop to `/readyz`", "secs_down", 1),
                     ("seconds from the stop until every agent is current", "secs_from_stop", 1),
                     ("connection attempts (SYNs) from the stop until every agent is current", "syn:window:attempts", 0),
                     ("connections accepted (SYN-ACKs), same, less the baseline's", "accepted_net", 0)]
        for name, key, nd in rows:
            vals = [gr.a(c, ph, key) for c in cols]
            if all(v is None for v in vals):
                continue
            w(f"| {name} | " + " | ".join(cell(x, nd) for x in vals) + " | " +
              " | ".join(rcell(gr.ra(ph, key, p)) for p in gr.peers) + " |")
        if ph in ("restart", "compaction", "outage"):
            fs = []
            for c in cols:
                by = {}
                for r in gr.runs:
                    for k, n in r["raw"]["variants"][c][ph]["audit"]["full_state_by_resource"].items():
                        by.setdefault(k, []).append(n)
                fs.append(", ".join(f"{k} {cell(agg(v), 0)}" for k, v in sorted(by.items())) or "none")
            w("| full states by resource | " + " | ".join(fs) + " |" + " |" * len(gr.peers))
            told = [agg([r["raw"]["variants"][c][ph].get("told", {}).get("not_current_while_down") for r in gr.runs])
                    if c == T else None for c in cols]
            w(f"| tattler streams told \"not current\" (`Stale`) while down (of {gr.A * 4}) | "
              + " | ".join(cell(x, 0) if c == T else "" for c, x in zip(cols, told)) + " |" + " |" * len(gr.peers))
        w("")
        w("<details><summary>Per run: audit answers by kind and HTTP code, the agents' own lines</summary>")
        w("")
        for r in gr.runs:
            V = r["raw"]["variants"]
            w(f"- {r['name']}: audit " + "; ".join(
                f"{c}: " + ", ".join(f"{k} {n}" for k, n in sorted(V[c][ph]["audit"]["codes"].items())) for c in cols)
              + ". Agents' lines: " + "; ".join(
                f"{c}: " + (", ".join(f"{k} {n}" for k, n in sorted(V[c][ph].get("agent_events", {}).items())) or "none")
                for c in cols) + ".")
        w("")
        w("</details>")
        w("")


w(f"## Per phase: {MAIN.A} agents")
w("")
phase_tables(MAIN)


# ---------------------------------------------------------------- memory per connection

def memory_section(gr):
    w(f"## What each connection costs the apiserver's memory ({gr.A} agents)")
    w("")
    w("At the end of each variant, after the last phase and 5 quiet seconds, the apiserver's memory after "
      "a GC with the fleet's idle watches open, then 5 s after the agents exited, after a GC (the same "
      f"process): RSS, Go heap in use (`/debug/pprof/heap?debug=1`) and goroutines ({runs_said(gr)}).")
    w("")
    w("| | connections | watches | Δ RSS, MB | Δ heap in use, MiB | Δ goroutines | RSS per connection, KB |")
    w("|---|---|---|---|---|---|---|")
    out = {}
    for c in gr.variants:
        per = {"dc": [], "rss": [], "heap": [], "gor": [], "rss_per": []}
        for r in gr.runs:
            a, b = r["raw"]["variants"][c]["memory_with"], r["raw"]["variants"][c]["memory_without"]
            dc = a["connections"] - b["connections"]
            per["dc"].append(dc)
            per["rss"].append((a["rss_kb"] - b["rss_kb"]) / 1024)
            per["heap"].append(((a["HeapInuse"] or 0) - (b["HeapInuse"] or 0)) / 2**20)
            per["gor"].append((a["goroutines"] or 0) - (b["goroutines"] or 0))
            per["rss_per"].append((a["rss_kb"] - b["rss_kb"]) / dc if dc else None)
        out[c] = {k: agg(v) for k, v in per.items()}
        o = out[c]
        w(f"| {NAMES[c]} | {cell(o['dc'], 0)} | {gr.A * 4} | {cell(o['rss'], 1)} | {cell(o['heap'], 1)} | "
          f"{cell(o['gor'], 0)} | {cell(o['rss_per'], 0)} |")
    w("")
    if CM in gr.variants:
        marg = []
        for r in gr.runs:
            V = r["raw"]["variants"]
            dt = V[T]["memory_with"]["connections"] - V[T]["memory_without"]["connections"]
            dm = V[CM]["memory_with"]["connections"] - V[CM]["memory_without"]["connections"]
            if dt != dm:
                rt = V[T]["memory_with"]["rss_kb"] - V[T]["memory_without"]["rss_kb"]
                rm = V[CM]["memory_with"]["rss_kb"] - V[CM]["memory_without"]["rss_kb"]
                marg.append((rt - rm) / (dt - dm))
        out["connection_marginal_rss_kb"] = agg(marg)
        w(f"The same {gr.A * 4} watches over one HTTP/1.1 connection each (tattler) and over one HTTP/2 "
          f"connection per agent (client-go, same scopes): the RSS difference per extra connection is "
          f"**{cell(agg(marg), 0)} KB**, what one connection costs beyond its watch (RSS moves by a few MB "
          "between readings on a shared machine).")
        w("")
    return out


mem = memory_section(MAIN)


# ---------------------------------------------------------------- other sizes

for gr in GROUPS[1:]:
    w(f"## {gr.A} agents ({gr.nodes} nodes, {gr.pods} pods): how the storm phases grow with the fleet")
    w("")
    w(f"Agents built from {commits(gr)}. " + baseline_line(gr))
    w("")
    for r in gr.runs:
        if r["machine"].get("stopped"):
            w(f"**{r['name']} is incomplete**: stopped {r['machine']['stopped']}. "
              f"Variants measured: {', '.join(r['raw']['variants'])}.")
            w("")
    headline(gr, f"### Headline: {gr.A} agents")
    w(f"Against {MAIN.A} agents (medians; × is the growth for {gr.A / MAIN.A:.0f}× the fleet):")
    w("")
    w("| phase | figure | " + " | ".join(f"{SHORT[c]}: {MAIN.A} → {gr.A}" for c in gr.variants) + " |")
    w("|---|---|" + "---|" * len(gr.variants))
    for ph in ("start", "restart", "compaction", "outage"):
        if ph not in gr.phases or ph not in MAIN.phases:
            continue
        for name, key, nd in (("apiserver CPU-s", "cpu", 2), ("full states", "full_state", 0),
                              ("s until current", "secs", 1), ("apiserver peak RSS, MB", "rss", 0)):
            cs = []
            for c in gr.variants:
                a, b = MAIN.a(c, ph, key), gr.a(c, ph, key)
                if a is None or b is None:
                    cs.append("—")
                    continue
                grow = f" ({b['median'] / a['median']:.1f}×)" if a["median"] else ""
                cs.append(f"{fmt(a['median'], nd)} → {fmt(b['median'], nd)}{grow}")
            w(f"| {ph} | {name} | " + " | ".join(cs) + " |")
    w("")
    outage_section(gr, f"### The outage at {gr.A} agents")
    tls_section(gr, f"### TLS handshakes at {gr.A} agents")
    w(f"### Per phase: {gr.A} agents")
    w("")
    phase_tables(gr)


# ---------------------------------------------------------------- load averages

w("## Load averages")
w("")
w("1-minute load average of the machine (`/proc/loadavg`) as each phase's window opened → as it closed; "
  "2 cores, shared with another engineer's niced builds and with the agents themselves. Run start and end: "
  "1/5/15-minute averages.")
w("")
allph = ["start", "churn", "restart", "compaction", "outage"]
w("| run | agents | start → end of the run | variant | " + " | ".join(allph) + " |")
w("|---|---|---|---|" + "---|" * len(allph))
for gr in GROUPS:
    for r in gr.runs:
        raw = r["raw"]
        first = True
        for v in ["baseline"] + gr.variants:
            ps = raw["baseline"] if v == "baseline" else raw["variants"][v]
            cs = []
            for ph in allph:
                p = ps.get(ph)
                cs.append(f"{p['load_before'][0]} → {p['load_after'][0]}" if isinstance(p, dict) and "load_before" in p else "")
            se = (f"{' '.join(raw['started_load'])} → {' '.join(raw.get('finished_load', ['?'] * 3))}" if first else "")
            w(f"| {r['name'] if first else ''} | {gr.A if first else ''} | {se} | {v} | " + " | ".join(cs) + " |")
            first = False
w("")


# ---------------------------------------------------------------- results.json

def slim(raw):
    """raw.json without the per-stream lists (they stay in the run's directory)."""
    raw = json.loads(json.dumps(raw))
    for v in list(raw["variants"].values()) + [raw["baseline"]]:
        for p in v.values():
            if isinstance(p, dict) and isinstance(p.get("told"), dict):
                p["told"].pop("per_stream", None)
    return raw


json.dump({"groups": [{"agents": gr.A, "nodes": gr.nodes, "pods": gr.pods, "runs": [r["name"] for r in gr.runs],
                       "figures": gr.rows_json()} for gr in GROUPS],
           "targets": target_rows, "memory_per_connection": mem,
           "runs": [{"name": r["name"], "dir": r["dir"], "machine": r["machine"], "raw": slim(r["raw"])} for r in RUNS]},
          open(JS, "w"), indent=1, default=str)
open(MD, "w").write("\n".join(md) + "\n")
