#!/usr/bin/env python3
"""Turns bench/out (written by bench/run.sh) into results.md and results.json.

usage: report.py OUT_DIR RESULTS_MD RESULTS_JSON

Every number written comes from the files in OUT_DIR: the clients' JSON
lines, /usr/bin/time's "%M %U %S %e", and the replay server's info line.
"""

import json
import os
import sys

from reportlib import fmt, kv, med, put_real_section, read, real_section, runs

OUT, MD, JS = sys.argv[1], sys.argv[2], sys.argv[3]

# The order of the tables; names not listed come after, sorted.
ORDER = [
    "raw", "raw-owned", "serde_json",
    "tattler-rust", "tattler-rust-noscrub", "tattler-c", "tattler-c-noscrub",
    "tattler-go", "tattler-go-noscrub",
    "kube-rs", "kube-rs-list", "client-go", "client-go-reflector",
]

DESCRIBE = {
    "raw": "std TcpStream; de-chunk, split on newlines, no JSON (the physical limit)",
    "raw-owned": "as raw, plus a copy of every frame into a fresh Vec<u8> (the least an API handing out owned frames does)",
    "serde_json": "as raw, then every frame into a serde_json::Value",
    "tattler-rust": "tattler Rust API, default settings (secret scrubbing on)",
    "tattler-rust-noscrub": "tattler Rust API, shaping.scrub = false",
    "tattler-c": "tattler C ABI (libtattler.a), default settings",
    "tattler-c-noscrub": "tattler C ABI, \"scrub\":false",
    "tattler-go": "tattler Go package (cgo over the C ABI), default settings",
    "tattler-go-noscrub": "tattler Go package, Scrub=false",
    "kube-rs": "kube-rs watcher, typed Pod, watcher::Config::default().streaming_lists()",
    "kube-rs-list": "kube-rs watcher, typed Pod, default config (paged LIST + WATCH)",
    "client-go": "client-go shared informer for pods (keeps its cache), WatchListClient",
    "client-go-reflector": "client-go bare reflector, store that keeps nothing, WatchListClient",
}


# Paths in commands are shown relative to the repository.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(OUT))) + "/"


def rel(cmd):
    return cmd.replace(ROOT, "")


def order_key(name):
    return (ORDER.index(name), name) if name in ORDER else (len(ORDER), name)


machine = kv(os.path.join(OUT, "machine.txt"))
invocation = (read(os.path.join(OUT, "invocation.txt"), "") or "").strip()
notes = (read(os.path.join(OUT, "build-notes.txt"), "") or "").rstrip()
result = {"machine": machine, "invocation": invocation, "build_notes": notes, "sync": {}, "extra": {}}

md = []
md.append("# tattler benchmark results\n")
md.append(
    "Written by `bench/run.sh` (via `bench/report.py`) from the run described here; "
    "nothing in this file is edited by hand. Raw outputs of the run: `bench/out/` (not committed).\n"
)
md.append("## Machine and run\n")
md.append(f"- Run: `{invocation}`, {machine.get('started', '?')} – {machine.get('finished', '?')} (UTC)")
md.append(
    f"- Machine: {machine.get('nproc', '?')} CPUs ({machine.get('cpu', '?')}), {machine.get('mem', '?')} RAM, "
    f"Linux {machine.get('kernel', '?')}; shared with other jobs (the 1-minute load average before each run is in results.json)"
)
md.append(
    f"- Toolchains: {machine.get('rustc', '?')}; {machine.get('go', '?')}; {machine.get('cc', '?')}"
)
md.append(
    f"- tattler built at {machine.get('built', '?')} from commit {machine.get('tattler_commit', '?')} "
    f"({machine.get('tattler_dirty', '?')} files with uncommitted changes under src/, ffi/, Cargo.toml; "
    f"libtattler.a sha256 {machine.get('libtattler_sha256', '?')}…, linked into the C and Go clients); "
    f"kube {machine.get('kube', '?')} with k8s-openapi {machine.get('k8s_openapi', '?')}; client-go {machine.get('client_go', '?')}"
)
md.append(
    "- MB is 10^6 bytes throughout (RSS too). Everything runs under `nice -n 10`; each client run is `/usr/bin/time -f '%M %U %S %e' CLIENT URL`: "
    "peak RSS is `%M`, CPU is user + system of the whole process (start-up and exit included), "
    "while seconds to Synced is measured by the client itself, from just before it connects (or opens the reader) "
    "to the moment the initial state is complete in its hands."
)
restarts = (read(os.path.join(OUT, "server-restarts.txt"), "") or "").rstrip()
result["server_restarts"] = restarts.splitlines()
if restarts:
    md.append("\n**The replay server went away during the run and was restarted** (the run that saw it fail was repeated):\n\n```\n" + restarts + "\n```")
if notes:
    md.append("\n**Clients that could not be built:**\n\n```\n" + notes + "\n```")
md.append("")

# ---------------------------------------------------------------- initial sync
sync_dir = os.path.join(OUT, "sync")
sizes = sorted(int(d) for d in os.listdir(sync_dir)) if os.path.isdir(sync_dir) else []
headline = {}
for n in sizes:
    d = os.path.join(sync_dir, str(n))
    info = json.loads(read(os.path.join(d, "info.json"), "{}") or "{}")
    stream_bytes = info.get("stream_bytes")
    clients = sorted((c for c in os.listdir(d) if os.path.isdir(os.path.join(d, c))), key=order_key)
    rows = {}
    for c in clients:
        rs = runs(os.path.join(d, c))
        for r in rs:
            if r["ok"] and r.get("objects") != n:
                r["ok"] = False
                r["error"] = f"delivered {r.get('objects')} objects, not {n}"
        good = [r for r in rs if r["ok"]]
        secs = med(rs, "seconds_to_synced")
        row = {
            "runs": len(rs),
            "ok_runs": len(good),
            "seconds_to_synced": secs,
            "seconds_min": min((r["seconds_to_synced"] for r in good), default=None),
            "seconds_max": max((r["seconds_to_synced"] for r in good), default=None),
            "objects_per_s": n / secs if secs else None,
            "mb_per_s": stream_bytes / secs / 1e6 if secs and stream_bytes else None,
            "peak_rss_mb": med(rs, "peak_rss_kb") * 1024 / 1e6 if med(rs, "peak_rss_kb") else None,
            "cpu_s": med(rs, "cpu_s"),
            "wall_s": med(rs, "wall_s"),
            "cmd": rel((read(os.path.join(d, c, "cmd.txt"), "") or "").strip()),
            "raw_runs": rs,
            "errors": sorted({r.get("error", "") for r in rs if not r["ok"]}),
        }
        rows[c] = row
    kube = rows.get("kube-rs", {}).get("seconds_to_synced")
    raw = rows.get("raw", {}).get("mb_per_s")
    for c, row in rows.items():
        row["x_kube_rs_objects_per_s"] = kube / row["seconds_to_synced"] if kube and row["seconds_to_synced"] else None
        row["pct_of_raw_mb_per_s"] = 100 * row["mb_per_s"] / raw if raw and row["mb_per_s"] else None
    headline[n] = rows
    result["sync"][str(n)] = {"server": info, "server_cmd": rel((read(os.path.join(d, "server.cmd"), "") or "").strip()), "clients": rows}

    md.append(f"## Initial sync, N = {n:,} pods\n")
    md.append(
        f"The replay server: {info.get('objects', '?'):,} pods, {info.get('avg_object_bytes', '?'):,} bytes of JSON each on average, "
        f"a watch-list body of {stream_bytes / 1e6:.1f} MB (MB/s below is this size over the seconds to Synced, the same bytes for every client). "
        f"Medians of {max((r['runs'] for r in rows.values()), default=0)} runs; the clients take turns within each run.\n"
    )
    md.append(
        "| client | s to Synced (median; min–max) | objects/s | MB/s | peak RSS MB | CPU s | × kube-rs objects/s | % of raw MB/s |"
    )
    md.append("|---|---|---|---|---|---|---|---|")
    for c in clients:
        r = rows[c]
        if not r["ok_runs"]:
            md.append(f"| {c} | failed: {'; '.join(r['errors'])} | | | | | | |")
            continue
        md.append(
            f"| {c} | {fmt(r['seconds_to_synced'], 3)} ({fmt(r['seconds_min'], 3)}–{fmt(r['seconds_max'], 3)}) | "
            f"{fmt(r['objects_per_s'], 0)} | {fmt(r['mb_per_s'], 1)} | {fmt(r['peak_rss_mb'], 1)} | {fmt(r['cpu_s'], 2)} | "
            f"{fmt(r['x_kube_rs_objects_per_s'], 2)} | {fmt(r['pct_of_raw_mb_per_s'], 1)} |"
        )
    bad = {c: r["errors"] for c, r in rows.items() if r["ok_runs"] < r["runs"]}
    if bad:
        md.append("\nFailed runs (left out of the medians): " + "; ".join(f"{c}: {', '.join(e)}" for c, e in bad.items()))
    md.append("")

# What each client is, and the commands.
if sizes:
    md.append("### The clients and the exact commands\n")
    md.append("`URL` is the replay server's `http://127.0.0.1:PORT`; the server is started as shown per N.\n")
    n0 = sizes[-1]
    for n in sizes:
        md.append(f"- server, N = {n:,}: `{result['sync'][str(n)]['server_cmd']}`")
    for c, r in sorted(headline[n0].items(), key=lambda kv_: order_key(kv_[0])):
        cmd = r["cmd"]
        cmd = " ".join("URL" if w.startswith("http://127.0.0.1:") else w for w in cmd.split())
        md.append(f"- **{c}**: {DESCRIBE.get(c, '')}. `{cmd}`")
    md.append("")
    # The server's request log, split by the harness's marks: what each client asked for in its first run.
    reqlog = read(os.path.join(sync_dir, str(n0), "requests.log"), "") or ""
    asked, cur = {}, None
    for l in reqlog.splitlines():
        parts = l.split()
        if len(parts) < 2:
            continue
        if parts[1].startswith("/bench-mark/"):
            _, _, name, run = parts[1].split("/", 3)
            cur = name if run == "1" else None
            continue
        if cur:
            asked.setdefault(cur, []).append(parts[1])
    md.append(f"What each client asked the server for (first run at N = {n0:,}, from `bench/out/sync/{n0}/requests.log`):\n")
    for c in sorted(asked, key=order_key):
        reqs = asked[c]
        lists = [q for q in reqs if "watch=" not in q and q.startswith("/api/v1/pods")]
        others = [q for q in reqs if q not in lists]
        parts = [f"`{q}`" for q in others]
        if lists:
            parts.append(f"{len(lists)} LIST requests (`{lists[0]}` …)")
        text = "; ".join(parts)
        md.append(f"- {c}: {text}")
    md.append("")
    result["requests"] = asked

# ---------------------------------------------------------------- targets
def target_rows(n):
    rows = headline.get(n, {})
    t = rows.get("tattler-rust", {})
    out = []

    def add(what, value, goal, ok, detail):
        out.append((what, value, goal, ok, detail))

    k = rows.get("kube-rs", {})
    if t.get("objects_per_s") and k.get("objects_per_s"):
        x = t["objects_per_s"] / k["objects_per_s"]
        add("Rust API objects/s vs kube-rs", f"{x:.2f}×", "≥ 5×", x >= 5,
            f"{t['objects_per_s']:,.0f} vs {k['objects_per_s']:,.0f} objects/s" + ("" if x >= 5 else f"; needs {5 * k['objects_per_s']:,.0f}, {5 / x:.1f}× faster than now"))
    raw = rows.get("raw", {})
    if t.get("mb_per_s") and raw.get("mb_per_s"):
        p = 100 * t["mb_per_s"] / raw["mb_per_s"]
        add("Rust API MB/s vs raw reader", f"{p:.1f}%", "≥ 30%", p >= 30,
            f"{t['mb_per_s']:,.0f} vs {raw['mb_per_s']:,.0f} MB/s" + ("" if p >= 30 else f"; needs {0.3 * raw['mb_per_s']:,.0f} MB/s, {30 / p:.1f}× faster than now"))
    for c, goal in (("tattler-c", 90), ("tattler-go", 75)):
        r = rows.get(c, {})
        if r.get("objects_per_s") and t.get("objects_per_s"):
            p = 100 * r["objects_per_s"] / t["objects_per_s"]
            add(f"{'C ABI' if c == 'tattler-c' else 'Go package'} vs Rust API (default settings)", f"{p:.0f}%", f"≥ {goal}%", p >= goal,
                f"{r['objects_per_s']:,.0f} vs {t['objects_per_s']:,.0f} objects/s")
        elif c not in rows:
            add(f"{c} vs Rust API", "not measured", f"≥ {goal}%", None, "client not built (see above)")
    if t.get("peak_rss_mb"):
        add(f"peak RSS, default settings, N = {n:,}", f"{t['peak_rss_mb']:.1f} MB", "≤ 32 MB", t["peak_rss_mb"] <= 32 if n >= 100000 else None,
            "the target is stated for 100,000 pods" if n < 100000 else "")
    g = rows.get("client-go", {})
    if t.get("objects_per_s") and g.get("objects_per_s"):
        x = t["objects_per_s"] / g["objects_per_s"]
        add("Rust API objects/s vs client-go informer", f"{x:.2f}×", "≥ 4×", x >= 4,
            f"{t['objects_per_s']:,.0f} vs {g['objects_per_s']:,.0f} objects/s")
        rr = t["peak_rss_mb"] / g["peak_rss_mb"]
        add("peak RSS vs client-go informer", f"{100 * rr:.0f}%", "< 50%", rr < 0.5,
            f"{t['peak_rss_mb']:.1f} vs {g['peak_rss_mb']:.1f} MB")
    return out


targets = {}
for n in sizes:
    rows = target_rows(n)
    targets[n] = rows
# Memory per tracked object, from the extra measurement.
mem_dir = os.path.join(OUT, "mem")
mem = None
if os.path.isdir(mem_dir):
    ns = sorted(int(x) for x in os.listdir(mem_dir))
    by = {n: runs(os.path.join(mem_dir, str(n), "tattler-rust-mem")) for n in ns}
    if 0 in by and len(ns) == 2:
        big = ns[1]
        h0, hn = med(by[0], "heap_bytes_after_sync"), med(by[big], "heap_bytes_after_sync")
        r0, rn = med(by[0], "rss_kb_after_sync"), med(by[big], "rss_kb_after_sync")
        p0, pn = med(by[0], "peak_rss_kb"), med(by[big], "peak_rss_kb")
        tracked = med(by[big], "tracked")
        mem = {
            "n": big, "tracked_objects": tracked,
            "heap_bytes_after_sync": {"0": h0, str(big): hn},
            "rss_kb_after_sync": {"0": r0, str(big): rn},
            "peak_rss_kb": {"0": p0, str(big): pn},
            "heap_bytes_per_object": (hn - h0) / big if hn is not None and h0 is not None else None,
            "rss_bytes_per_object": (rn - r0) * 1024 / big if rn is not None and r0 is not None else None,
            "runs": {str(k): v for k, v in by.items()},
        }
        result["extra"]["memory"] = mem

if targets:
    md.append("## Targets of issue 7 (same run)\n")
    md.append("| N | target | measured | goal | met | detail |")
    md.append("|---|---|---|---|---|---|")
    for n in sizes:
        for what, value, goal, ok, detail in targets[n]:
            m = "n/a" if ok is None else ("yes" if ok else "**no**")
            md.append(f"| {n:,} | {what} | {value} | {goal} | {m} | {detail} |")
    if mem and mem["heap_bytes_per_object"] is not None:
        b = mem["heap_bytes_per_object"]
        rb = mem["rss_bytes_per_object"]
        md.append(
            f"| {mem['n']:,} | retained state per tracked object | {b:.0f} B (heap); {rb:.0f} B (RSS) | ≤ 128 B | "
            f"{'yes' if b <= 128 else '**no**'} | live heap after sync minus an empty sync's, over {mem['n']:,}; see Memory below |"
        )
    md.append("")
    result["targets"] = {str(n): [dict(zip(("target", "measured", "goal", "met", "detail"), t)) for t in targets[n]] for n in sizes}

# ---------------------------------------------------------------- extras
live_dir = os.path.join(OUT, "live")
if os.path.isdir(live_dir):
    info = json.loads(read(os.path.join(live_dir, "info.json"), "{}") or "{}")
    md.append("## Live stream: steady-state cost and latency\n")
    md.append(
        f"After the sync of {info.get('objects', 0):,} pods and the bookmark, the replay server pauses 2 s, then sends "
        f"{info.get('live_rate')} MODIFIED events per second for {info.get('live_secs')} s, one chunk each, written as it is due "
        "(TCP_NODELAY), each with its send time (CLOCK_REALTIME ns) in an annotation. The client takes "
        "now − send time right after `next()` returns the Update, and its own CPU time (getrusage, all threads) "
        "from the first live update to the last. \"CPU per 1,000 updates/s\" is the fraction of one core the stream "
        "costs at 1,000 updates/s (CPU seconds / wall seconds × 1,000 / rate). Medians of the runs.\n"
    )
    md.append(f"Server: `{rel((read(os.path.join(live_dir, 'server.cmd'), '') or '').strip())}`\n")
    md.append("| client | updates | achieved rate /s | CPU s | CPU per 1,000 updates/s (core fraction) | CPU µs per update | latency p50 µs | p90 µs | p99 µs | max µs | command |")
    md.append("|---|---|---|---|---|---|---|---|---|---|---|")
    live = {}
    for c in sorted((x for x in os.listdir(live_dir) if os.path.isdir(os.path.join(live_dir, x))), key=order_key):
        rs = runs(os.path.join(live_dir, c))
        live[c] = {k: med(rs, k) for k in ("live_updates", "live_rate", "live_cpu_seconds", "cpu_core_fraction_per_1000_ups",
                                            "cpu_us_per_update", "latency_us_p50", "latency_us_p90", "latency_us_p99", "latency_us_max")}
        live[c]["raw_runs"] = rs
        cmd = rel(" ".join("URL" if w.startswith("http://") else w for w in (read(os.path.join(live_dir, c, "cmd.txt"), "") or "").split()))
        L = live[c]
        if not any(r["ok"] for r in rs):
            md.append(f"| {c} | failed | | | | | | | | | `{cmd}` |")
            continue
        md.append(
            f"| {c} | {fmt(L['live_updates'])} | {fmt(L['live_rate'], 0)} | {fmt(L['live_cpu_seconds'], 2)} | {fmt(L['cpu_core_fraction_per_1000_ups'], 3)} | "
            f"{fmt(L['cpu_us_per_update'], 1)} | {fmt(L['latency_us_p50'], 0)} | {fmt(L['latency_us_p90'], 0)} | {fmt(L['latency_us_p99'], 0)} | {fmt(L['latency_us_max'], 0)} | `{cmd}` |"
        )
    md.append("")
    result["extra"]["live"] = {"server": info, "clients": live}

if mem:
    md.append("## Memory per tracked object\n")
    md.append(
        f"`tattler-rust-mem` (the Rust client with a counting global allocator) syncs, drops every entry, waits 0.5 s, "
        f"then reads its live heap bytes, VmRSS and VmHWM; once against {mem['n']:,} pods and once against an empty "
        "server (0 pods, just the bookmark). The difference over N is what tracking one object costs. Medians of the runs.\n"
    )
    md.append("| pods | tracked (stats().objects) | live heap after sync | RSS after sync | peak RSS |")
    md.append("|---|---|---|---|---|")
    for k in ("0", str(mem["n"])):
        tr = med(mem["runs"][k], "tracked")
        md.append(
            f"| {int(k):,} | {fmt(tr)} | {fmt(mem['heap_bytes_after_sync'][k])} B | "
            f"{fmt(mem['rss_kb_after_sync'][k] * 1024 / 1e6 if mem['rss_kb_after_sync'][k] is not None else None, 1)} MB | "
            f"{fmt(mem['peak_rss_kb'][k] * 1024 / 1e6 if mem['peak_rss_kb'][k] is not None else None, 1)} MB |"
        )
    md.append(
        f"\nPer tracked object: **{fmt(mem['heap_bytes_per_object'], 1)} bytes of live heap**, "
        f"{fmt(mem['rss_bytes_per_object'], 1)} bytes of RSS (RSS also holds freed memory the allocator keeps).\n"
    )
    md.append(rel("Commands: " + "; ".join(
        f"`{(read(os.path.join(mem_dir, k, 'server.cmd'), '') or '').strip()}` then `"
        + " ".join("URL" if w.startswith("http://") else w for w in (read(os.path.join(mem_dir, k, 'tattler-rust-mem', 'cmd.txt'), '') or '').split()) + "`"
        for k in ("0", str(mem["n"]))) + "\n"))

relist_dir = os.path.join(OUT, "relist", "tattler-rust")
if os.path.isdir(relist_dir):
    rs = runs(relist_dir)
    keys = ("relist_seconds", "relist_cpu_seconds", "snapshots", "updates", "deletes", "adds", "rss_before_kb",
            "peak_rss_during_relist_kb", "rss_after_kb", "peak_rss_before_kb")
    R = {k: med(rs, k) for k in keys}
    R["raw_runs"] = rs
    info = json.loads(read(os.path.join(OUT, "relist", "info.json"), "{}") or "{}")
    result["extra"]["relist"] = R
    cmd = rel(" ".join("URL" if w.startswith("http://") else w for w in (read(os.path.join(relist_dir, "cmd.txt"), "") or "").split()))
    md.append("## Relist swap\n")
    md.append(
        f"After the initial sync of {info.get('objects', 0):,} pods, one thread calls `reader.relist()` while the main thread consumes "
        "the entries it produces (a fresh watch-list syncs beside the running stream, then replaces it). Timed from the call to its "
        "return; CPU is the process's (getrusage) over the same span; the peak RSS is VmHWM after resetting it "
        "(`/proc/self/clear_refs`) just before the call. Medians of the runs.\n"
    )
    md.append("| relist s | CPU s | Snapshot / Update / Delete / Add entries | RSS before | peak RSS during | RSS after | peak RSS of the initial sync |")
    md.append("|---|---|---|---|---|---|---|")
    mb = lambda v: fmt(v * 1024 / 1e6 if v is not None else None, 1)
    md.append(
        f"| {fmt(R['relist_seconds'], 3)} | {fmt(R['relist_cpu_seconds'], 2)} | {fmt(R['snapshots'])} / {fmt(R['updates'])} / {fmt(R['deletes'])} / {fmt(R['adds'])} | "
        f"{mb(R['rss_before_kb'])} MB | {mb(R['peak_rss_during_relist_kb'])} MB | {mb(R['rss_after_kb'])} MB | {mb(R['peak_rss_before_kb'])} MB |"
    )
    md.append(f"\nCommands: `{rel((read(os.path.join(OUT, 'relist', 'server.cmd'), '') or '').strip())}` then `{cmd}`\n")

md.append("## Reading the numbers\n")
md.append(
    "- The machine is shared: other jobs ran beside this one, so single runs vary; the tables show medians and the min–max "
    "of seconds to Synced. Ratios are taken within the run, from the medians.\n"
    "- raw is the ceiling of this machine and this server on loopback: it only de-chunks and finds newlines. Its sync "
    "lasts a fraction of a second, so its MB/s moves more from run to run than the others' (raw-owned, which does "
    "more, can come out ahead of it in a median).\n"
    "- Issue 7 quotes figures from another measurement (raw ≈ 980 MB/s, serde_json ≈ 70 MB/s, kube-rs ≈ 42 MB/s and "
    "9,900 objects/s at 9.6 MB); every ratio here is computed from this run alone.\n"
    "- kube-rs and client-go parse every pod into typed structs; client-go's informer also keeps all of them in its cache "
    "(that is what its users get), the reflector variant keeps none (but client-go's watch-list still gathers the whole "
    "initial state in a temporary store before handing it over).\n"
    "- Where a target is missed, the profile in `bench/PROFILE.md` says where the time goes (it is a separate, dated "
    "measurement, not part of this run).\n"
)

text = "\n".join(md)
# bench/real.sh's section (a real kube-apiserver) is not this run's: keep it as it is.
kept = real_section(read(MD, "") or "")
if kept:
    text = put_real_section(text, kept)
with open(MD, "w") as f:
    f.write(text)
with open(JS, "w") as f:
    json.dump(result, f, indent=1, sort_keys=False)
    f.write("\n")
