"""What bench/report.py (the replay server) and bench/report_real.py (a real
kube-apiserver) share: reading a run's raw files, medians, number formats,
and the marked section of results.md that bench/real.sh owns."""

import json
import os
import statistics


def read(path, default=None):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default


def kv(path):
    out = {}
    for line in (read(path, "") or "").splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            out[k] = v
    return out


def runs(dir_):
    """Every run of one client: its JSON line merged with /usr/bin/time's
    numbers, the load average before it, and (bench/real.sh) the server
    side's CPU over it (ROUND.server)."""
    res = []
    if not os.path.isdir(dir_):
        return res
    for f in sorted(os.listdir(dir_)):
        if not f.endswith(".out"):
            continue
        k = f[:-4]
        line = (read(os.path.join(dir_, f), "") or "").strip().splitlines()
        t = (read(os.path.join(dir_, k + ".time"), "") or "").strip().splitlines()
        err = (read(os.path.join(dir_, k + ".err"), "") or "").strip()
        r = {"run": int(k) if k.isdigit() else k, "ok": False}
        try:
            r.update(json.loads(line[-1]))
            r["ok"] = True
        except (IndexError, ValueError):
            r["error"] = err.splitlines()[-1] if err else "no output"
        if t:
            last = t[-1].split()
            if len(last) == 4:
                try:
                    rss, u, s, e = int(last[0]), float(last[1]), float(last[2]), float(last[3])
                    r.update({"peak_rss_kb": rss, "user_s": u, "sys_s": s, "cpu_s": u + s, "wall_s": e})
                except ValueError:
                    pass
        load = read(os.path.join(dir_, k + ".load"))
        if load:
            r["loadavg_1m_before"] = float(load.split()[0])
        server = read(os.path.join(dir_, k + ".server"))
        if server:
            try:
                r.update(json.loads(server))
            except ValueError:
                pass
            if r.get("exit"):
                r["ok"] = False
                r.setdefault("error", err.splitlines()[-1] if err else f"exit {r['exit']}")
        res.append(r)
    return res


def med(rs, key):
    v = [r[key] for r in rs if r.get("ok") and isinstance(r.get(key), (int, float))]
    return statistics.median(v) if v else None


def fmt(v, nd=2):
    if v is None:
        return "–"
    if isinstance(v, float):
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        return f"{v:.{nd}f}"
    return f"{v:,}"


# bench/real.sh's section of results.md lies between these lines; bench/report.py
# rewrites the rest of the file and keeps it.
REAL_BEGIN = "<!-- real-apiserver: begin (written by bench/real.sh; bench/run.sh keeps it) -->"
REAL_END = "<!-- real-apiserver: end -->"


def real_section(text):
    """The marked section in text (markers included), or ''."""
    a = text.find(REAL_BEGIN)
    b = text.find(REAL_END, a + 1) if a >= 0 else -1
    return text[a:b + len(REAL_END)] if a >= 0 and b >= 0 else ""


def put_real_section(text, section):
    """text with its marked section replaced by section (appended if none)."""
    old = real_section(text)
    if old:
        return text.replace(old, section)
    return text.rstrip("\n") + "\n\n" + section + "\n"
