#!/usr/bin/env bash
# Measures each rustls provider tattler could use: a cold release build of this
# scratch crate (one job, empty target folder, the registry warm and --offline),
# its binary's size, and the client's CPU for 1000 full TLS 1.3 handshakes
# (no resumption, RSA-2048 server certificate) to a rustls aws-lc-rs server in
# another process that prefers Go's key exchanges. Run `cargo fetch` here first.
#   bench/tls-providers/run.sh [OUT_DIR]     (default /tmp/tls-providers)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${1:-/tmp/tls-providers}
mkdir -p "$out/certs"
cd "$here"
for f in ring aws rustcrypto graviola; do
  rm -rf "$out/t-$f"
  echo "== $f: load average before $(cut -d' ' -f1-3 /proc/loadavg)"
  CARGO_BUILD_JOBS=1 CARGO_TARGET_DIR="$out/t-$f" /usr/bin/time -f "$f: wall %e s, user %U s, sys %S s" \
    nice cargo build --offline --release --no-default-features --features "$f" 2> "$out/build-$f.log"
  tail -1 "$out/build-$f.log"
  echo "   load average after $(cut -d' ' -f1-3 /proc/loadavg); $(grep -c Compiling "$out/build-$f.log") crates; binary $(stat -c %s "$out/t-$f/release/tls-providers") bytes"
done
grep -h "Building with" "$out"/t-aws/release/build/aws-lc-sys-*/output || true
CARGO_TARGET_DIR="$out/t-server" nice cargo build -q --offline --release --no-default-features --features server
c=$out/certs
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$c/ca.key" -out "$c/ca.crt" -days 30 -subj /CN=bench-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$c/srv.key" -out "$c/srv.csr" -subj /CN=localhost 2>/dev/null
printf "subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n" > "$c/ext"
openssl x509 -req -in "$c/srv.csr" -CA "$c/ca.crt" -CAkey "$c/ca.key" -CAcreateserial -days 30 -extfile "$c/ext" -out "$c/srv.crt" 2>/dev/null
openssl pkcs8 -topk8 -nocrypt -in "$c/srv.key" -out "$c/srv.pk8"
port=18444
"$out/t-server/release/tls-providers" server $port "$c/srv.crt" "$c/srv.pk8" &
server=$!
trap 'kill $server' EXIT
sleep 1
echo "== handshakes: load average $(cut -d' ' -f1-3 /proc/loadavg)"
for run in 1 2 3; do
  for f in ring aws rustcrypto graviola; do
    echo -n "$f: "; "$out/t-$f/release/tls-providers" client 1000 $port "$c/ca.crt"
  done
done
