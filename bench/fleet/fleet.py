#!/usr/bin/env python3
"""The fleet benchmark's phases (bench/fleet/run.sh starts the cluster and calls this).

    fleet.py OUT_DIR CLUSTER_DIR BIN_DIR

One fleet per variant (tattler, client-go-metadata, client-go-typed), each
on a freshly restarted apiserver, each through the same phases:

  start       A agents launched at once; until every agent's four resources are Synced
  churn       CHURN pod updates at RATE/s, then a marker write; until every agent saw it
  restart     cluster.sh restart-apiserver, then a marker; until every agent saw it
  compaction  apiserver stopped, etcd's revision moved past every agent's and
              compacted there, apiserver started, then a marker; until every agent saw it
  outage      apiserver stopped for OUTAGE seconds (60; etcd keeps running), the
              agents' connection attempts counted meanwhile, then started and a
              marker; until every agent saw it

and before them the same with no agents (the baseline). Per phase: the
apiserver's CPU (utime+stime, the window opening on a collected heap), its
peak RSS (VmHWM, reset through /proc/PID/clear_refs), established TCP
connections on its port, the agents' full states and resumes (from the audit
log: the agents' ServiceAccount at Metadata level), and the seconds until
every agent is current. At the end of each variant: the apiserver's memory
with the fleet's idle connections and without them. TCP connection attempts
(SYNs to the apiserver's port) and accepted connections (its SYN-ACKs) are
counted on "lo" through a raw socket in the restart, compaction and outage
phases. In the baseline: the apiserver CPU of a TLS handshake (fresh
connections against one kept-alive connection). Writes OUT_DIR/raw.json.
"""

import base64
import ctypes
import http.client
import json
import os
import re
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time
import urllib.parse

OUT, CLUSTER, BIN = sys.argv[1], sys.argv[2], sys.argv[3]
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
K8S = os.path.join(ROOT, "tests/k8s/cluster.sh")
A = int(os.environ.get("AGENTS", "100"))
NODES = int(os.environ.get("NODES", "100"))
CHURN = int(os.environ.get("CHURN", "2000"))
RATE = float(os.environ.get("RATE", "50"))
VARIANTS = os.environ.get("VARIANTS", "tattler client-go-metadata client-go-typed").split()
WAIT = float(os.environ.get("WAIT", "240"))  # seconds a phase may wait for its agents
RESOURCES = ("pods", "nodes", "namespaces", "services")
TCK = os.sysconf("SC_CLK_TCK")
KNOWN_EVENTS = {"open", "Synced", "Error", "marker", "stats", "closed", "reopen"}
REOPEN = os.environ.get("REOPEN", "1") == "1"
OUTAGE = float(os.environ.get("OUTAGE", "60"))  # seconds the apiserver is down in the outage phase
TLS_N = int(os.environ.get("TLS_N", "1000"))  # connections per round of the handshake probe


def log(msg):
    print(f"[fleet {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def env():
    out = {}
    for line in open(os.path.join(CLUSTER, "env")):
        m = re.match(r"export (\w+)=(.*)", line.strip())
        if m:
            v = m.group(2)
            out[m.group(1)] = v.strip("'\"")
    return out


def cluster(cmd):
    t = time.monotonic()
    r = subprocess.run([K8S, cmd, CLUSTER], capture_output=True, text=True,
                       env=dict(os.environ, TATTLER_K8S_BIN=BIN))
    if r.returncode != 0:
        raise SystemExit(f"cluster.sh {cmd} failed: {r.stderr[-2000:]}")
    return r.stdout.strip(), time.monotonic() - t


def proc(pid, field):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def cpu_ticks(pid):
    try:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return int(f[11]) + int(f[12])
    except (OSError, IndexError):
        return 0


def reset_peak(pid):
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


def curl(path, e=None):
    e = e or env()
    r = subprocess.run(["curl", "-sf", "--max-time", "60", "--cacert", e["K8S_CA"], "-H",
                        "Authorization: Bearer " + open(e["K8S_TOKEN_FILE"]).read().strip(),
                        e["K8S_SERVER"] + path], capture_output=True)
    return r.stdout.decode("utf-8", "replace") if r.returncode == 0 else None


def settle():
    """A collected heap: the apiserver's GC lands on no phase's window."""
    if curl("/debug/pprof/heap?gc=1") is None:
        log("could not ask the apiserver for a GC (profiling off?)")
    time.sleep(1)


def memory():
    """RSS, Go heap in use and goroutines after a GC: the median of three readings."""
    rs = [memory_once() for _ in range(3)]
    m = {k: sorted(r[k] for r in rs)[1] if all(r[k] is not None for r in rs) else None for k in rs[0]}
    m["readings"] = rs
    return m


def memory_once():
    settle()
    e = env()
    heap = curl("/debug/pprof/heap?gc=1&debug=1", e) or ""
    gor = curl("/debug/pprof/goroutine?debug=1", e) or ""
    m = {"rss_kb": proc(e["APISERVER_PID"], "VmRSS")}
    for k in ("HeapInuse", "HeapAlloc", "Sys"):
        g = re.search(rf"# {k} = (\d+)", heap)
        m[k] = int(g.group(1)) if g else None
    g = re.match(r"goroutine profile: total (\d+)", gor)
    m["goroutines"] = int(g.group(1)) if g else None
    m["connections"] = connections()
    # Kernel memory of all TCP sockets (pages; machine-wide, so other work shows too):
    # a socket's buffers are not in the apiserver's RSS.
    g = re.search(r"TCP: .* mem (\d+)", open("/proc/net/sockstat").read())
    m["tcp_mem_pages"] = int(g.group(1)) if g else None
    return m


def connections():
    port = env()["APISERVER_PORT"]
    r = subprocess.run(["ss", "-Htn", "state", "established", f"( sport = :{port} )"],
                       capture_output=True, text=True)
    return len([l for l in r.stdout.splitlines() if l.strip()])


def loadavg():
    return open("/proc/loadavg").read().split()[:3]


def loader(*args):
    e = env()
    r = subprocess.run([os.path.join(BIN_T, "fleet-loader"), "-server", e["K8S_SERVER"], "-ca",
                        e["K8S_CA"], "-token-file", e["K8S_TOKEN_FILE"], *args],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"fleet-loader {args[0]} failed: {r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- the audit log

AUDIT = os.path.join(CLUSTER, "audit.log")


def audit_offset():
    try:
        return os.path.getsize(AUDIT)
    except OSError:
        return 0


def wall_stamp():
    """Now as the audit log writes requestReceivedTimestamp (RFC 3339, microseconds, UTC)."""
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1e6):06d}Z"


def audit(since, received_after):
    """The agents' requests received after `received_after` (a wall_stamp),
    read from byte `since` on, one per auditID: a watch that began before the
    window and ended in it (its ResponseComplete) is not the window's."""
    reqs = {}
    try:
        f = open(AUDIT, "rb")
    except OSError:
        return summarize({})
    f.seek(since)
    for line in f:
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if ev.get("requestReceivedTimestamp", "") < received_after:
            continue
        r = reqs.setdefault(ev["auditID"], {"uri": ev.get("requestURI", ""), "verb": ev.get("verb"),
                                            "ua": ev.get("userAgent", ""), "code": None})
        code = (ev.get("responseStatus") or {}).get("code")
        if code is not None:
            r["code"] = code
    return summarize(reqs)


def classify(r):
    u = urllib.parse.urlsplit(r["uri"])
    q = urllib.parse.parse_qs(u.query)
    if r["verb"] == "watch" or q.get("watch") == ["true"]:
        return "full_state" if q.get("sendInitialEvents") == ["true"] else "resume"
    if r["verb"] == "list":
        return "list_page" if q.get("continue") else "full_state"
    return "other"


def resource_of(uri):
    parts = urllib.parse.urlsplit(uri).path.strip("/").split("/")
    return parts[-1] if parts else ""


def summarize(reqs):
    s = {"requests": 0, "full_state": 0, "resume": 0, "list_page": 0, "other": 0, "codes": {},
         "full_state_by_resource": {}, "full_state_nodes": {"pods": set(), "nodes": set()}}
    for r in reqs.values():
        c = classify(r)
        s["requests"] += 1
        s[c] += 1
        key = f"{c}:{r['code']}"
        s["codes"][key] = s["codes"].get(key, 0) + 1
        if c == "full_state":
            res = resource_of(r["uri"])
            s["full_state_by_resource"][res] = s["full_state_by_resource"].get(res, 0) + 1
            sel = urllib.parse.parse_qs(urllib.parse.urlsplit(r["uri"]).query).get("fieldSelector", [""])[0]
            if res in s["full_state_nodes"] and "=" in sel:
                s["full_state_nodes"][res].add(sel.split("=", 1)[1])
    s["full_state_nodes"] = {k: len(v) for k, v in s["full_state_nodes"].items()}
    return s


# ---------------------------------------------------------------- connection attempts

class Syns:
    """SYNs to the apiserver's port (connection attempts) and its SYN-ACKs
    (connections it accepted), seen on "lo" through an AF_PACKET socket with a
    classic BPF filter: it watches and changes nothing. Kernel timestamps,
    turned into time.monotonic()'s clock."""

    def __init__(self, port):
        self.port, self.syn, self.synack, self.error = int(port), [], [], None
        self.lock = threading.Lock()
        self.stopping = False
        try:
            self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
            self.sock.setsockopt(socket.SOL_SOCKET, 26, self.filter())  # SO_ATTACH_FILTER
            self.sock.setsockopt(socket.SOL_SOCKET, 35, 1)  # SO_TIMESTAMPNS
            self.sock.bind(("lo", 0x0800))
            self.sock.settimeout(0.2)
        except OSError as e:
            self.error, self.sock = str(e), None
            log(f"raw socket on lo refused ({e}): no SYN counts")
            return
        self.offset = time.time() - time.monotonic()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def filter(self):
        # IPv4, TCP, not a fragment, SYN set, either port the apiserver's: what
        # 'tcp[tcpflags] & tcp-syn != 0 and tcp port P' means, by hand (no tcpdump
        # here); the kernel drops everything else, so the apiserver's traffic costs
        # this thread nothing. (code, jump if true, jump if false, k) per instruction.
        P, drop, accept = self.port, 14, 13
        prog = [(0x28, 0, 0, 12), (0x15, 0, drop - 2, 0x0800), (0x30, 0, 0, 23), (0x15, 0, drop - 4, 6),
                (0x28, 0, 0, 20), (0x45, drop - 6, 0, 0x1fff), (0xb1, 0, 0, 14), (0x50, 0, 0, 27),
                (0x45, 0, drop - 9, 0x02), (0x48, 0, 0, 14), (0x15, accept - 11, 0, P), (0x48, 0, 0, 16),
                (0x15, 0, drop - 13, P), (0x06, 0, 0, 0xffff), (0x06, 0, 0, 0)]
        self.prog = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *i) for i in prog))
        return struct.pack("HL", len(prog), ctypes.addressof(self.prog))

    def run(self):
        while not self.stopping:
            try:
                data, anc, _, addr = self.sock.recvmsg(128, 64)
            except socket.timeout:
                continue
            except OSError:
                return
            if addr[2] == 4:  # PACKET_OUTGOING: loopback shows it again as received
                continue
            t = None
            for level, kind, val in anc:
                if level == socket.SOL_SOCKET and kind == 35 and len(val) >= 16:
                    sec, ns = struct.unpack("qq", val[:16])
                    t = sec + ns / 1e9 - self.offset
            t = t if t is not None else time.monotonic()
            ihl = (data[14] & 0x0f) * 4
            sport, dport = struct.unpack("!HH", data[14 + ihl:18 + ihl])
            flags = data[14 + ihl + 13]
            with self.lock:
                if dport == self.port and not flags & 0x10:
                    self.syn.append(t)
                elif sport == self.port and flags & 0x10:
                    self.synack.append(t)

    def count(self, t0, t1):
        """(attempts, accepted) with kernel time in [t0, t1)."""
        if self.sock is None:
            return None
        with self.lock:
            return (sum(t0 <= t < t1 for t in self.syn), sum(t0 <= t < t1 for t in self.synack))

    def times(self, t0, t1):
        with self.lock:
            return [t - t0 for t in self.syn if t0 <= t < t1]

    def close(self):
        self.stopping = True
        if self.sock is not None:
            self.thread.join()
            self.sock.close()


def syn_summary(syns, t0, t1, agents, buckets=10.0):
    """Attempts and accepted connections in [t0, t1), per second and per agent
    per minute, and attempts per `buckets` seconds (the shape of the backoff)."""
    c = syns.count(t0, t1) if syns else None
    if c is None:
        return {"method": "none", "error": syns.error if syns else "no counter"}
    span = t1 - t0
    ts = syns.times(t0, t1)
    hist = [0] * max(1, int(span // buckets + (span % buckets > 0.5)))
    for t in ts:
        hist[min(len(hist) - 1, int(t // buckets))] += 1
    return {"method": "AF_PACKET raw socket on lo (SYN to the apiserver port, SYN-ACK from it)",
            "seconds": span, "attempts": c[0], "accepted": c[1], "attempts_per_s": c[0] / span,
            "attempts_per_agent_per_min": c[0] / agents / span * 60 if agents else None,
            "bucket_s": buckets, "attempts_by_bucket": hist}


# ---------------------------------------------------------------- TLS handshakes

def tls_probe(token):
    """The apiserver CPU of a TLS handshake: N authenticated GETs (the agents'
    token, one Node) on N fresh connections (full handshakes), on N connections
    resuming one TLS session, and on one kept-alive connection; twice, in turn.
    The difference per connection is what a connection costs beyond its request."""
    e = env()
    host, port = "127.0.0.1", int(e["APISERVER_PORT"])
    ctx = ssl.create_default_context(cafile=e["K8S_CA"])
    hdrs = {"Authorization": "Bearer " + token, "Accept": "application/json"}
    path = "/api/v1/nodes/node-000"

    def get(c):
        c.request("GET", path, headers=hdrs)
        r = c.getresponse()
        r.read()
        if r.status != 200:
            raise SystemExit(f"tls probe: GET {path}: {r.status}")

    def fresh(n):
        for _ in range(n):
            c = http.client.HTTPSConnection(host, port, context=ctx, timeout=30)
            get(c)
            c.close()

    def resumed(n):
        c = http.client.HTTPSConnection(host, port, context=ctx, timeout=30)
        get(c)  # TLS 1.3 tickets arrive after the handshake: read a response first
        sess = c.sock.session
        c.close()
        reused = 0
        for _ in range(n):
            raw = socket.create_connection((host, port), timeout=30)
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as http.client's own connect does
            s = ctx.wrap_socket(raw, server_hostname=host, session=sess)
            reused += s.session_reused
            c = http.client.HTTPSConnection(host, port, context=ctx, timeout=30)
            c.sock = s
            get(c)
            if s.session is not None:
                sess = s.session
            c.close()
        return reused

    def kept(n):
        c = http.client.HTTPSConnection(host, port, context=ctx, timeout=30)
        for _ in range(n):
            get(c)
        c.close()

    pid = e["APISERVER_PID"]
    out = {"n": TLS_N, "path": path, "rounds": []}
    kept(50)
    fresh(20)  # warm the token cache and the handshake path
    for _ in range(2):
        rnd = {}
        for name, f in (("kept_alive", kept), ("fresh", fresh), ("resumed", resumed)):
            settle()
            c0, t0 = cpu_ticks(pid), time.monotonic()
            x = f(TLS_N)
            rnd[name] = {"cpu_s": (cpu_ticks(pid) - c0) / TCK, "wall_s": time.monotonic() - t0}
            if name == "resumed":
                rnd[name]["sessions_reused"] = x
        out["rounds"].append(rnd)
    for k in ("kept_alive", "fresh", "resumed"):
        out[k + "_cpu_s"] = sum(r[k]["cpu_s"] for r in out["rounds"])
    n = TLS_N * len(out["rounds"])
    out["full_handshake_cpu_ms"] = (out["fresh_cpu_s"] - out["kept_alive_cpu_s"]) / n * 1000
    out["resumed_handshake_cpu_ms"] = (out["resumed_cpu_s"] - out["kept_alive_cpu_s"]) / n * 1000
    with ctx.wrap_socket(socket.create_connection((host, port)), server_hostname=host) as t:
        out["tls_version"], out["cipher"] = t.version(), t.cipher()[0]
    return out


# ---------------------------------------------------------------- the agents

class Fleet:
    def __init__(self, variant, kubeconfig, d):
        self.variant, self.dir, self.procs = variant, d, []
        os.makedirs(d, exist_ok=True)
        self.kubeconfig = kubeconfig

    def node(self, i):
        return f"node-{i % NODES:03d}"

    def command(self, i):
        node = self.node(i)
        name = f"agent-{i:03d}"
        if self.variant == "tattler":
            cfg = os.path.join(self.dir, f"{name}.json")
            with open(cfg, "w") as f:
                json.dump({"kubeconfig": self.kubeconfig, "resources": [
                    {"resource": "pods", "field_selector": f"spec.nodeName={node}"},
                    {"resource": "nodes", "field_selector": f"metadata.name={node}"},
                    {"resource": "namespaces", "metadata_only": True},
                    {"resource": "services", "metadata_only": True}]}, f)
            return [os.path.join(BIN_T, "tattler-fleet-agent"), cfg, name] + (["--reopen-ended"] if REOPEN else [])
        v = self.variant.removeprefix("client-go-")
        return [os.path.join(BIN_T, "client-go-agent"), "-variant", v, "-node", node, "-name", name,
                self.kubeconfig]

    def start(self):
        for i in range(A):
            name = f"agent-{i:03d}"
            p = subprocess.Popen(self.command(i), stdin=subprocess.PIPE,
                                 stdout=open(os.path.join(self.dir, f"{name}.jsonl"), "w"),
                                 stderr=open(os.path.join(self.dir, f"{name}.err"), "w"))
            self.procs.append(p)

    def lines(self, i):
        out = []
        try:
            for line in open(os.path.join(self.dir, f"agent-{i:03d}.jsonl")):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
        except OSError:
            pass
        return out

    def all_lines(self):
        return [self.lines(i) for i in range(A)]

    def events(self, t0, t1):
        """What the agents printed in [t0, t1], by kind (Error split by `ended`)."""
        n = {}
        for ls in self.all_lines():
            for l in ls:
                if t0 <= l["t"] <= t1 and l.get("ev") not in ("stats", "marker"):
                    k = l["ev"] + (" ended" if l.get("ended") else "")
                    n[k] = n.get(k, 0) + 1
        return n

    def dead(self):
        return [i for i, p in enumerate(self.procs) if p.poll() is not None]

    def wait(self, done, since, what):
        """Until done(lines of agent, since) holds for every agent; the last time it became true."""
        deadline = time.monotonic() + WAIT
        while True:
            per = []
            for ls in self.all_lines():
                per.append(done(ls, since))
            if all(t is not None for t in per):
                return max(per), 0
            if self.dead():
                log(f"{self.variant}: agents exited: {self.dead()[:5]}")
            if time.monotonic() > deadline:
                missing = sum(t is None for t in per)
                log(f"{self.variant}: {missing} agents not {what} after {WAIT:.0f} s")
                return max([t for t in per if t is not None], default=None), missing
            time.sleep(0.25)

    def tell(self, word):
        for p in self.procs:
            try:
                p.stdin.write((word + "\n").encode())
                p.stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                pass

    def stats(self):
        since = time.monotonic()
        self.tell("stats")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            got = [next((l for l in reversed(ls) if l.get("ev") == "stats" and l["t"] >= since), None)
                   for ls in self.all_lines()]
            if all(got):
                return got
            time.sleep(0.2)
        return [g for g in got if g]

    def stop(self):
        self.tell("quit")
        for p in self.procs:
            try:
                p.stdin.close()
            except OSError:
                pass
        deadline = time.monotonic() + 15
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def synced_all(ls, since):
    """When the last of the four resources said Synced (at or after `since`)."""
    last = {}
    for l in ls:
        if l.get("ev") == "Synced" and l["t"] >= since:
            last.setdefault(l["resource"], l["t"])
    return max(last.values()) if len(last) == len(RESOURCES) else None


def saw_marker(value):
    def done(ls, since):
        first = {}
        for l in ls:
            if l.get("ev") == "marker" and l["value"] >= value:
                first.setdefault(l["resource"], l["t"])
        return max(first.values()) if len(first) == len(RESOURCES) else None
    return done


# ---------------------------------------------------------------- phases

marker_value = int(time.time())


def next_marker():
    global marker_value
    marker_value += 1
    return marker_value


class Window:
    """One phase's measurement: CPU over the window (across a restart too),
    peak RSS, connections, the audit log's requests, the load average."""

    def __init__(self):
        e = env()
        self.pid = e["APISERVER_PID"]
        self.ticks0 = cpu_ticks(self.pid)
        self.old_ticks = 0
        reset_peak(self.pid)
        self.audit0 = audit_offset()
        self.wall0 = wall_stamp()
        self.t0 = time.monotonic()
        self.load0 = loadavg()

    def apiserver_stopping(self):
        # The old process's share up to its stop; the new one's is its whole life.
        self.old_ticks = cpu_ticks(self.pid) - self.ticks0
        self.old_peak = proc(self.pid, "VmHWM")

    def close(self, **extra):
        time.sleep(1)
        e = env()
        pid = e["APISERVER_PID"]
        if pid == self.pid:
            ticks = cpu_ticks(pid) - self.ticks0
            peak = proc(pid, "VmHWM")
        else:
            ticks = self.old_ticks + cpu_ticks(pid)
            peak = proc(pid, "VmHWM")  # the new process's peak (the old one's is in old_peak_kb)
        r = {"apiserver_cpu_s": ticks / TCK, "apiserver_peak_rss_kb": peak,
             "connections": connections(), "window_s": time.monotonic() - self.t0,
             "audit": audit(self.audit0, self.wall0), "wall_start": self.wall0,
             "audit_offset": self.audit0, "load_before": self.load0, "load_after": loadavg()}
        if pid != self.pid:
            r["old_peak_rss_kb"] = getattr(self, "old_peak", None)
        r.update(extra)
        return r


def phase_start(fleet):
    settle()
    w = Window()
    fleet.start()
    last, missing = fleet.wait(synced_all, w.t0, "synced")
    return w.close(seconds_to_current=(last - w.t0) if last else None, agents_missing=missing,
                   agent_events=fleet.events(w.t0, time.monotonic()))


def phase_churn(fleet):
    settle()
    w = Window()
    churn = loader("churn", "-pods", PODMAP, "-n", str(CHURN), "-rate", str(RATE))
    t = time.monotonic()
    v = next_marker()
    loader("marker", "-pods", PODMAP, "-value", str(v), "-nodes", str(NODES))
    last, missing = fleet.wait(saw_marker(v), t, "current") if fleet else (time.monotonic(), 0)
    return w.close(churn=churn, seconds_to_current=(last - t) if last else None, agents_missing=missing,
                   agent_events=fleet.events(w.t0, time.monotonic()) if fleet else {})


def phase_restart(fleet, mode="restart"):
    """restart: cluster.sh restart-apiserver; compaction: stopped, etcd compacted
    past every resourceVersion, started; outage: stopped for OUTAGE seconds, started."""
    settle()
    before = fleet.stats() if fleet else []
    w = Window()
    w.apiserver_stopping()
    t_stop = time.monotonic()
    extra = {}
    if mode == "compaction":
        _, down_s = cluster("stop-apiserver")
        # Move etcd's revision past every agent's (puts outside /registry), then
        # compact there: whatever resourceVersion an agent holds is gone, and the
        # new watch cache starts after it.
        e = env()
        for i in range(3):
            subprocess.run(["curl", "-fsS", "-X", "POST", e["ETCD_ENDPOINT"] + "/v3/kv/put", "-d",
                            json.dumps({"key": base64.b64encode(b"/fleet-bench/bump").decode(),
                                        "value": base64.b64encode(str(i).encode()).decode()})],
                           capture_output=True, check=True)
        rev, _ = cluster("compact")
        extra["compacted_at"] = rev.splitlines()[-1]
        _, up_s = cluster("start-apiserver")
    elif mode == "outage":
        cluster("stop-apiserver")
        t_down = time.monotonic()
        time.sleep(OUTAGE)
        t_start = time.monotonic()
        cluster("start-apiserver")
        extra.update(outage_s=OUTAGE, seconds_stopping=t_down - t_stop, seconds_starting=time.monotonic() - t_start)
    else:
        cluster("restart-apiserver")
    t_ready = time.monotonic()
    v = next_marker()
    loader("marker", "-pods", PODMAP, "-value", str(v), "-nodes", str(NODES))
    if fleet:
        last, missing = fleet.wait(saw_marker(v), t_ready, "current")
    else:
        last, missing = time.monotonic(), 0
    after = fleet.stats() if fleet else []
    t_end = time.monotonic()
    r = w.close(t_stop=t_stop, t_ready=t_ready, seconds_down=t_ready - t_stop, seconds_to_current=(last - t_ready) if last else None,
                seconds_from_stop=(last - t_stop) if last else None, agents_missing=missing, **extra)
    agents = A if fleet else 0
    # Connection attempts (SYNs) and accepted connections (SYN-ACKs) over the
    # phase, and in its parts: until /readyz, and after it.
    r["syns"] = {"window": syn_summary(SYNS, t_stop, t_end, agents),
                 "until_ready": syn_summary(SYNS, t_stop, t_ready, agents),
                 "after_ready": syn_summary(SYNS, t_ready, t_end, agents)}
    if mode == "outage":
        r["syns"].update(stopping=syn_summary(SYNS, t_stop, t_down, agents),
                         down=syn_summary(SYNS, t_down, t_start, agents),
                         starting=syn_summary(SYNS, t_start, t_ready, agents))
    r["stats_delta"] = stats_delta(before, after)
    if fleet:
        r["told"] = told(fleet, t_stop, t_ready, last or time.monotonic())
        r["agent_events"] = fleet.events(t_stop, time.monotonic())
    return r


def stats_delta(before, after):
    """tattler: per-stream resyncs and reconnects over the phase; client-go: requests by kind."""
    d = {}
    for b, a in zip(before, after):
        if "streams" in a:
            bs = {s["resource"]: s for s in b.get("streams", [])}
            for s in a["streams"]:
                for k in ("resyncs", "reconnects"):
                    d[k] = d.get(k, 0) + s[k] - bs.get(s["resource"], {}).get(k, 0)
                d["streams_resynced"] = d.get("streams_resynced", 0) + (
                    s["resyncs"] > bs.get(s["resource"], {}).get("resyncs", 0))
        if "requests" in a:
            for k, v in a["requests"].items():
                d["requests_" + k] = d.get("requests_" + k, 0) + v - b.get("requests", {}).get(k, 0)
    return d


def told(fleet, t_stop, t_ready, t_end):
    """What each agent's consumer was told around the restart, per resource: a
    'not current' entry (any change kind the agent does not know: Stale, 7)
    while the server was down, Errors, and a Synced after it came back."""
    n = {"streams": A * len(RESOURCES), "not_current_while_down": 0, "synced_after": 0,
         "not_current_then_synced": 0, "error_entries_while_down": 0, "streams_with_error_while_down": 0,
         "kinds_seen": {}, "per_stream": []}
    for ls in fleet.all_lines():
        for res in RESOURCES:
            mine = [l for l in ls if l.get("resource") == res and t_stop <= l["t"] <= t_end]
            notice = [l for l in mine if l.get("ev") not in KNOWN_EVENTS and l["t"] <= t_ready]
            for l in mine:
                if l.get("ev") not in KNOWN_EVENTS:
                    k = f"{l['ev']}({l.get('change')})"
                    n["kinds_seen"][k] = n["kinds_seen"].get(k, 0) + 1
            errs = [l for l in mine if l.get("ev") == "Error" and l["t"] <= t_ready]
            synced = [l for l in mine if l.get("ev") == "Synced" and l["t"] >= t_stop]
            n["not_current_while_down"] += bool(notice)
            n["synced_after"] += bool(synced)
            n["not_current_then_synced"] += bool(notice and any(s["t"] > notice[0]["t"] for s in synced))
            n["per_stream"].append({"agent": ls[0]["agent"] if ls else None, "resource": res,
                                    "not_current_while_down": bool(notice), "synced_after": bool(synced),
                                    "errors_while_down": len(errs)})
            n["error_entries_while_down"] += len(errs)
            n["streams_with_error_while_down"] += bool(errs)
    return n


def main():
    global BIN_T, PODMAP, SYNS
    BIN_T = os.environ["FLEET_BIN"]
    PODMAP = os.path.join(OUT, "podmap.json")
    raw = {"agents": A, "nodes": NODES, "churn_writes": CHURN, "churn_rate": RATE, "variants": {},
           "nproc": os.cpu_count(), "started_load": loadavg()}
    raw["setup"] = {"podmap": loader("podmap", "-o", PODMAP)}
    kubeconfig = os.path.join(OUT, "agent.kubeconfig")
    SYNS = Syns(env()["APISERVER_PORT"])
    raw["syn_counter"] = "AF_PACKET raw socket on lo" if SYNS.sock is not None else f"none: {SYNS.error}"

    log("baseline: no agents")
    cluster("restart-apiserver")
    time.sleep(3)
    settle()
    e = env()
    t0, c0 = time.monotonic(), cpu_ticks(e["APISERVER_PID"])
    time.sleep(10)
    base = {"idle_cpu_s_per_s": (cpu_ticks(e["APISERVER_PID"]) - c0) / TCK / (time.monotonic() - t0),
            "memory": memory()}
    token = re.search(r'token: "([^"]+)"', open(kubeconfig).read()).group(1)
    base["tls"] = tls_probe(token)
    log(f"baseline: TLS handshake {base['tls']['full_handshake_cpu_ms']:.3f} ms of apiserver CPU "
        f"(resumed {base['tls']['resumed_handshake_cpu_ms']:.3f})")
    base["churn"] = phase_churn(None)
    base["restart"] = phase_restart(None)
    base["compaction"] = phase_restart(None, "compaction")
    base["outage"] = phase_restart(None, "outage")
    raw["baseline"] = base
    log(f"baseline: {json.dumps({k: v.get('apiserver_cpu_s') for k, v in base.items() if isinstance(v, dict)})}")

    for variant in VARIANTS:
        log(f"{variant}: {A} agents")
        cluster("restart-apiserver")  # every variant starts on a fresh apiserver process
        time.sleep(3)
        fleet = Fleet(variant, kubeconfig, os.path.join(OUT, variant))
        r = {}
        r["start"] = phase_start(fleet)
        log(f"{variant}: start {r['start']['seconds_to_current']} s, {r['start']['apiserver_cpu_s']:.2f} CPU-s")
        r["churn"] = phase_churn(fleet)
        log(f"{variant}: churn {r['churn']['apiserver_cpu_s']:.2f} CPU-s")
        r["restart"] = phase_restart(fleet)
        log(f"{variant}: restart {r['restart']['seconds_to_current']} s")
        r["compaction"] = phase_restart(fleet, "compaction")
        log(f"{variant}: compaction {r['compaction']['seconds_to_current']} s, "
            f"full states {r['compaction']['audit']['full_state']}")
        r["outage"] = phase_restart(fleet, "outage")
        log(f"{variant}: outage {r['outage']['syns']['down'].get('attempts')} connection attempts in "
            f"{OUTAGE:.0f} s, current {r['outage']['seconds_to_current']} s after /readyz")
        time.sleep(5)
        r["memory_with"] = memory()
        r["open"] = next((l for l in fleet.lines(0) if l.get("ev") == "open"), {})
        fleet.stop()
        time.sleep(5)
        r["memory_without"] = memory()
        raw["variants"][variant] = r
        with open(os.path.join(OUT, "raw.json"), "w") as f:
            json.dump(raw, f, indent=1)
    raw["finished_load"] = loadavg()
    SYNS.close()
    with open(os.path.join(OUT, "raw.json"), "w") as f:
        json.dump(raw, f, indent=1)
    log("done")


if __name__ == "__main__":
    main()
