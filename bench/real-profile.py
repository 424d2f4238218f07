#!/usr/bin/env python3
"""Reads `perf script` output of a call-graph profile on stdin and puts each
sample into one bucket: walking its stack from the leaf up, the first frame
that belongs to a known part (TLS, ureq, a tattler module, crossbeam or
parking_lot, the bench client) names it. Generic frames (memcpy, malloc,
serde_json, core/alloc/std) are charged to the part that called them.
Samples whose leaf is in the kernel are kept apart, by the part above them.
Prints a Markdown table: share of the samples, and CPU-s at the sampling
period.
"""

import collections
import re
import sys

PARTS = [
    ("TLS (rustls record layer, AES-GCM in ring)", re.compile(r"rustls|\bring::|ring_core|aes_|gcm_|GFp_|aws_lc|chacha", re.I)),
    ("HTTP/1.1 and de-chunking (ureq)", re.compile(r"ureq")),
    ("scrubbing (kube_tattler::scrub)", re.compile(r"kube_tattler::scrub")),
    ("decoding (kube_tattler::decode: frames, the token check, metadata)", re.compile(r"kube_tattler::decode")),
    ("state, entries, hand-off (kube_tattler::watch/state/reader/entry, crossbeam, parking_lot)",
     re.compile(r"kube_tattler::(watch|state|reader|entry|shape|transport)|crossbeam|parking_lot")),
    ("the consumer (the bench client's loop)", re.compile(r"tattler_bench_client|tattler_rust::")),
]

head = re.compile(r"^(\S.*?)\s+(\d+)(?:/(\d+))?\s+[\d.]+:\s+(\d+)\s+\S+")
frame = re.compile(r"^\s+[0-9a-f]+\s+(.*)\s+\((.*)\)\s*$")

buckets = collections.Counter()
threads = collections.Counter()
total = 0
period_sum = 0


def flush(sample):
    global total, period_sum
    if sample is None:
        return
    comm, period, frames = sample
    if not frames:
        return
    total += 1
    period_sum += period
    threads[comm] += period
    kernel = "kernel" in frames[0][1] or frames[0][1].startswith("[")
    part = "other (thread start, libc, unresolved)"
    for sym, dso in frames:
        hit = next((name for name, rx in PARTS if rx.search(sym)), None)
        if hit:
            part = hit
            break
    buckets[("kernel, under " + part) if kernel else part] += period


cur = None
for line in sys.stdin:
    m = head.match(line)
    if m:
        flush(cur)
        cur = (m.group(1), int(m.group(4)), [])
        continue
    if cur is not None:
        f = frame.match(line)
        if f:
            cur[2].append((f.group(1), f.group(2)))
flush(cur)

if not total:
    print("no samples")
    sys.exit(0)
print(f"{total:,} samples, {period_sum / 1e9:.2f} CPU-s sampled\n")
print("| where (leafmost known frame) | share | CPU-s |")
print("|---|---|---|")
for name, p in buckets.most_common():
    print(f"| {name} | {100 * p / period_sum:.1f}% | {p / 1e9:.2f} |")
print("\n| thread | share |")
print("|---|---|")
for name, p in threads.most_common():
    print(f"| {name} | {100 * p / period_sum:.1f}% |")
