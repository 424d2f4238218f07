#!/usr/bin/env bash
# A real etcd + kube-apiserver on 127.0.0.1 for tests (envtest-style).
#
#   cluster.sh up DIR [extra kube-apiserver flags...]   e.g. --feature-gates=WatchList=false
#   cluster.sh down DIR
#   cluster.sh restart-apiserver DIR
#   cluster.sh stop-apiserver DIR / start-apiserver DIR   (etcd keeps running)
#   cluster.sh compact DIR          compact etcd at its current revision (provokes 410 Expired)
#   cluster.sh env DIR              print DIR/env (eval "$(cluster.sh env DIR)")
#   cluster.sh status DIR
#
# Binaries come from build.sh (cached; the first build took 4.5 min here):
# Kubernetes 1.37 unless TATTLER_K8S_VERSION=1.36.
# Set TATTLER_K8S_BIN=/path/to/bin to skip build.sh.
#
# DIR gets: kubeconfig, kubeconfig-nobody, admin.token, nobody.token, ca.crt,
# env (K8S_SERVER K8S_CA K8S_TOKEN_FILE K8S_NOBODY_TOKEN_FILE KUBECONFIG
# ETCD_ENDPOINT APISERVER_PID ETCD_PID ...), etcd.pid, apiserver.pid,
# etcd.log, apiserver.log, pki/, tokens.csv.
# User "admin" is in system:masters; user "nobody" has no groups (RBAC gives it
# only discovery), so it gets 403 on resources.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
READY_TIMEOUT="${TATTLER_K8S_READY_TIMEOUT:-120}"

log() { echo "cluster.sh: $*" >&2; }
die() { echo "cluster.sh: ERROR: $*" >&2; exit 1; }
usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }

bindir() {
  if [[ -n "${TATTLER_K8S_BIN:-}" ]]; then echo "$TATTLER_K8S_BIN"; return; fi
  local out
  out="$("$here/build.sh")" || die "build.sh failed"
  echo "${out##*$'\n'}"
}

# --- processes ---------------------------------------------------------------

alive() { # pid -> 0 if running (zombies count as dead)
  local pid="$1" st
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 1
  st="$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)"
  [[ "$st" != Z && "$st" != X ]]
}

# Is pid the process we started for this DIR? (guards against recycled PIDs)
ours() { # pid dir
  alive "$1" || return 1
  local c
  c="$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null || true)"
  [[ "$c" == *"$2"* ]]
}

stop_pidfile() { # pidfile dir name
  local pf="$1" dir="$2" name="$3" pid i
  [[ -f "$pf" ]] || return 0
  pid="$(cat "$pf")"
  if ours "$pid" "$dir"; then
    log "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do alive "$pid" || break; sleep 0.1; done
    if alive "$pid"; then
      log "$name did not exit after 10s, sending KILL"
      kill -KILL "$pid" 2>/dev/null || true
      for ((i = 0; i < 100; i++)); do alive "$pid" || break; sleep 0.1; done
      alive "$pid" && die "$name (pid $pid) survived SIGKILL"
    fi
  fi
  rm -f "$pf"
}

# Start a command detached (own session, stdio to a log) and write its pid.
spawn() { # pidfile logfile cmd...
  local pf="$1" lf="$2"; shift 2
  rm -f "$pf"
  setsid bash -c 'echo $$ >"$0"; exec "$@"' "$pf" "$@" </dev/null >>"$lf" 2>&1 &
  local i
  for ((i = 0; i < 50; i++)); do [[ -s "$pf" ]] && return 0; sleep 0.05; done
  die "could not start $3"
}

# --- ports -------------------------------------------------------------------

port_busy() {
  if command -v ss >/dev/null 2>&1; then
    [[ -n "$(ss -Htan "( sport = :$1 or dport = :$1 )" 2>/dev/null)" ]] && return 0
  fi
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# A free port below the ephemeral range; callers retry on bind failure.
free_port() {
  local p i
  for ((i = 0; i < 200; i++)); do
    p=$((20000 + RANDOM % 12000))
    port_busy "$p" || { echo "$p"; return 0; }
  done
  die "no free port found"
}

# --- setup -------------------------------------------------------------------

make_pki() { # dir
  local d="$1/pki"
  mkdir -p "$d"
  (
    cd "$d"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 \
      -subj "/CN=tattler-test-ca" \
      -addext "basicConstraints=critical,CA:TRUE" \
      -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr \
      -subj "/CN=kube-apiserver" 2>/dev/null
    cat >apiserver.ext <<'EOF'
basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc
EOF
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
      -out apiserver.crt -days 3650 -extfile apiserver.ext 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    rm -f apiserver.csr apiserver.ext ca.srl
    chmod 600 ./*.key
  ) || die "openssl failed"
  cp "$d/ca.crt" "$1/ca.crt"
}

write_kubeconfig() { # file server ca user token
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: tattler-test
  cluster:
    server: $2
    certificate-authority: $3
users:
- name: $4
  user:
    token: $5
contexts:
- name: $4@tattler-test
  context:
    cluster: tattler-test
    user: $4
    namespace: default
current-context: $4@tattler-test
EOF
  chmod 600 "$1"
}

write_env() { # dir
  local dir="$1" f="$1/env" k
  {
    echo "# source this file: . $f"
    for k in K8S_DIR K8S_BIN_DIR K8S_SERVER K8S_CA K8S_TOKEN_FILE K8S_NOBODY_TOKEN_FILE \
             KUBECONFIG K8S_NOBODY_KUBECONFIG ETCD_ENDPOINT APISERVER_PORT ETCD_PORT \
             APISERVER_PID ETCD_PID; do
      printf 'export %s=%q\n' "$k" "${!k}"
    done
  } >"$f.tmp"
  mv "$f.tmp" "$f"
}

wait_etcd() { # dir endpoint pid
  local i
  for ((i = 0; i < 300; i++)); do
    alive "$3" || return 1
    curl -fsS --max-time 2 "$2/health" 2>/dev/null | grep -q '"health":"true"' && return 0
    sleep 0.2
  done
  return 1
}

wait_readyz() { # dir pid -> 0 ready, 1 died, 2 timeout
  local dir="$1" pid="$2" deadline=$((SECONDS + READY_TIMEOUT)) out
  while ((SECONDS < deadline)); do
    alive "$pid" || return 1
    out="$(curl -sS --max-time 5 --cacert "$dir/ca.crt" \
      -H "Authorization: Bearer $(cat "$dir/admin.token")" \
      "$K8S_SERVER/readyz" 2>/dev/null || true)"
    [[ "$out" == ok ]] && return 0
    sleep 0.5
  done
  return 2
}

dump_logs() { # dir
  local f
  for f in etcd.log apiserver.log; do
    [[ -f "$1/$f" ]] || continue
    echo "----- last 60 lines of $1/$f -----" >&2
    tail -n 60 "$1/$f" >&2
  done
}

load_state() { # dir
  [[ -f "$1/env" ]] || die "$1/env not found (was 'cluster.sh up $1' run?)"
  # shellcheck disable=SC1091
  . "$1/env"
}

apiserver_args() { # dir -> fills global array ARGS
  local dir="$1"
  ARGS=(
    --etcd-servers="$ETCD_ENDPOINT"
    --bind-address=127.0.0.1
    --advertise-address=127.0.0.1
    # 1.37 refuses a loopback advertise address under the default (lease)
    # reconciler, which would write it into the kubernetes Service's
    # endpoints; nothing here reaches the apiserver through that Service.
    --endpoint-reconciler-type=none
    --secure-port="$APISERVER_PORT"
    --cert-dir="$dir/pki"
    --tls-cert-file="$dir/pki/apiserver.crt"
    --tls-private-key-file="$dir/pki/apiserver.key"
    --client-ca-file="$dir/pki/ca.crt"
    --token-auth-file="$dir/tokens.csv"
    --authorization-mode=RBAC
    --service-account-key-file="$dir/pki/sa.pub"
    --service-account-signing-key-file="$dir/pki/sa.key"
    --service-account-issuer=https://kubernetes.default.svc.cluster.local
    --service-cluster-ip-range=10.0.0.0/24
    --allow-privileged=true
    # No controller-manager creates "default" service accounts, so let pods in.
    --disable-admission-plugins=ServiceAccount
    --profiling=false
  )
  local extra=()
  [[ -s "$dir/apiserver.extra-args" ]] && mapfile -t extra <"$dir/apiserver.extra-args"
  ARGS+=("${extra[@]}")
}

# Start kube-apiserver; retry on another port if the one chosen is taken
# (only when pick_port=1). Returns when /readyz is ok, dies otherwise.
start_apiserver() { # dir pick_port
  local dir="$1" pick="$2" attempt rc
  for attempt in 1 2 3; do
    if [[ "$pick" == 1 ]]; then APISERVER_PORT="$(free_port)"; fi
    K8S_SERVER="https://127.0.0.1:$APISERVER_PORT"
    apiserver_args "$dir"
    echo "=== $(date -u +%FT%TZ) starting kube-apiserver on :$APISERVER_PORT" >>"$dir/apiserver.log"
    spawn "$dir/apiserver.pid" "$dir/apiserver.log" "$K8S_BIN_DIR/kube-apiserver" "${ARGS[@]}"
    APISERVER_PID="$(cat "$dir/apiserver.pid")"
    write_env "$dir"
    log "kube-apiserver pid $APISERVER_PID on $K8S_SERVER, waiting for /readyz (<= ${READY_TIMEOUT}s)"
    rc=0; wait_readyz "$dir" "$APISERVER_PID" || rc=$?
    [[ $rc == 0 ]] && return 0
    if [[ $rc == 1 && "$pick" == 1 ]] && grep -q 'address already in use' "$dir/apiserver.log"; then
      log "port $APISERVER_PORT was taken, retrying"
      continue
    fi
    if [[ $rc == 1 ]]; then log "kube-apiserver exited"; else log "kube-apiserver not ready after ${READY_TIMEOUT}s"; fi
    dump_logs "$dir"
    return 1
  done
  dump_logs "$dir"
  return 1
}

# --- commands ----------------------------------------------------------------

cmd_up() {
  [[ $# -ge 1 ]] || usage
  local dir="$1"; shift
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  if [[ -f "$dir/apiserver.pid" ]] && ours "$(cat "$dir/apiserver.pid")" "$dir"; then
    die "a cluster is already running in $dir (cluster.sh down $dir first)"
  fi
  if [[ -f "$dir/etcd.pid" ]] && ours "$(cat "$dir/etcd.pid")" "$dir"; then
    die "etcd is already running in $dir (cluster.sh down $dir first)"
  fi

  K8S_BIN_DIR="$(bindir)"
  local b
  for b in etcd kube-apiserver; do [[ -x "$K8S_BIN_DIR/$b" ]] || die "$K8S_BIN_DIR/$b missing"; done
  command -v openssl >/dev/null || die "openssl is required"
  command -v curl >/dev/null || die "curl is required"

  rm -rf "$dir/etcd-data" "$dir/pki"
  rm -f "$dir"/{etcd,apiserver}.log "$dir/env"
  printf '%s\n' "$@" | sed '/^$/d' >"$dir/apiserver.extra-args"

  make_pki "$dir"
  local admin_tok nobody_tok
  admin_tok="$(openssl rand -hex 24)"
  nobody_tok="$(openssl rand -hex 24)"
  printf '%s\n' "$admin_tok" >"$dir/admin.token"
  printf '%s\n' "$nobody_tok" >"$dir/nobody.token"
  {
    printf '%s,admin,uid-admin,"system:masters"\n' "$admin_tok"
    printf '%s,nobody,uid-nobody\n' "$nobody_tok"
  } >"$dir/tokens.csv"
  chmod 600 "$dir/tokens.csv" "$dir/admin.token" "$dir/nobody.token"

  K8S_DIR="$dir"
  K8S_CA="$dir/ca.crt"
  K8S_TOKEN_FILE="$dir/admin.token"
  K8S_NOBODY_TOKEN_FILE="$dir/nobody.token"
  KUBECONFIG="$dir/kubeconfig"
  K8S_NOBODY_KUBECONFIG="$dir/kubeconfig-nobody"
  APISERVER_PID=""; APISERVER_PORT=""; K8S_SERVER=""

  # etcd
  local attempt peer ok=0
  for attempt in 1 2 3; do
    ETCD_PORT="$(free_port)"; peer="$(free_port)"
    [[ "$peer" == "$ETCD_PORT" ]] && continue
    ETCD_ENDPOINT="http://127.0.0.1:$ETCD_PORT"
    rm -rf "$dir/etcd-data"
    spawn "$dir/etcd.pid" "$dir/etcd.log" "$K8S_BIN_DIR/etcd" \
      --name=tattler-test --data-dir="$dir/etcd-data" \
      --listen-client-urls="$ETCD_ENDPOINT" --advertise-client-urls="$ETCD_ENDPOINT" \
      --listen-peer-urls="http://127.0.0.1:$peer" --initial-advertise-peer-urls="http://127.0.0.1:$peer"
    ETCD_PID="$(cat "$dir/etcd.pid")"
    if wait_etcd "$dir" "$ETCD_ENDPOINT" "$ETCD_PID"; then ok=1; break; fi
    if ! alive "$ETCD_PID" && grep -q 'address already in use' "$dir/etcd.log"; then
      log "etcd port taken, retrying"; continue
    fi
    break
  done
  if [[ $ok != 1 ]]; then
    log "etcd did not become healthy"
    dump_logs "$dir"
    stop_pidfile "$dir/etcd.pid" "$dir" etcd
    exit 1
  fi
  log "etcd pid $ETCD_PID on $ETCD_ENDPOINT"

  if ! start_apiserver "$dir" 1; then
    stop_pidfile "$dir/apiserver.pid" "$dir" kube-apiserver
    stop_pidfile "$dir/etcd.pid" "$dir" etcd
    exit 1
  fi
  write_kubeconfig "$dir/kubeconfig" "$K8S_SERVER" "$K8S_CA" admin "$admin_tok"
  write_kubeconfig "$dir/kubeconfig-nobody" "$K8S_SERVER" "$K8S_CA" nobody "$nobody_tok"
  write_env "$dir"
  log "ready: $K8S_SERVER (source $dir/env)"
  cat "$dir/env"
}

cmd_down() {
  [[ $# -eq 1 ]] || usage
  local dir
  dir="$(cd "$1" 2>/dev/null && pwd)" || die "no such dir $1"
  stop_pidfile "$dir/apiserver.pid" "$dir" kube-apiserver
  stop_pidfile "$dir/etcd.pid" "$dir" etcd
  log "down: $dir"
}

cmd_restart_apiserver() {
  [[ $# -eq 1 ]] || usage
  local dir
  dir="$(cd "$1" 2>/dev/null && pwd)" || die "no such dir $1"
  load_state "$dir"
  alive "$ETCD_PID" || die "etcd (pid $ETCD_PID) is not running"
  stop_pidfile "$dir/apiserver.pid" "$dir" kube-apiserver
  if ! start_apiserver "$dir" 0; then
    stop_pidfile "$dir/apiserver.pid" "$dir" kube-apiserver
    exit 1
  fi
  log "kube-apiserver restarted: pid $APISERVER_PID on $K8S_SERVER"
}

cmd_stop_apiserver() {
  [[ $# -eq 1 ]] || usage
  local dir
  dir="$(cd "$1" 2>/dev/null && pwd)" || die "no such dir $1"
  stop_pidfile "$dir/apiserver.pid" "$dir" kube-apiserver
  log "kube-apiserver stopped"
}

cmd_start_apiserver() {
  [[ $# -eq 1 ]] || usage
  local dir
  dir="$(cd "$1" 2>/dev/null && pwd)" || die "no such dir $1"
  load_state "$dir"
  alive "$ETCD_PID" || die "etcd (pid $ETCD_PID) is not running"
  if ! start_apiserver "$dir" 0; then
    stop_pidfile "$dir/apiserver.pid" "$dir" kube-apiserver
    exit 1
  fi
  log "kube-apiserver started: pid $APISERVER_PID on $K8S_SERVER"
}

cmd_compact() {
  [[ $# -eq 1 ]] || usage
  local dir out rev
  dir="$(cd "$1" 2>/dev/null && pwd)" || die "no such dir $1"
  load_state "$dir"
  # Any range response carries the store's current revision in its header.
  out="$(curl -fsS --max-time 10 -X POST "$ETCD_ENDPOINT/v3/kv/range" -d '{"key":"AA=="}')" \
    || die "etcd range request failed"
  rev="$(printf '%s' "$out" | grep -o '"revision":"[0-9]*"' | head -1 | grep -o '[0-9][0-9]*')" \
    || die "no revision in etcd response: $out"
  out="$(curl -sS --max-time 30 -X POST "$ETCD_ENDPOINT/v3/kv/compaction" \
    -d "{\"revision\":\"$rev\",\"physical\":true}")" || die "etcd compaction request failed"
  if printf '%s' "$out" | grep -q '"error"\|"code"'; then
    # "required revision has been compacted" means it already is: fine.
    printf '%s' "$out" | grep -q 'has been compacted' || die "compaction failed: $out"
  fi
  log "compacted etcd at revision $rev"
  echo "$rev"
}

cmd_env() {
  [[ $# -eq 1 ]] || usage
  [[ -f "$1/env" ]] || die "$1/env not found"
  cat "$1/env"
}

cmd_status() {
  [[ $# -eq 1 ]] || usage
  local dir
  dir="$(cd "$1" 2>/dev/null && pwd)" || die "no such dir $1"
  load_state "$dir"
  local st=0
  if alive "$ETCD_PID"; then echo "etcd: running (pid $ETCD_PID, $ETCD_ENDPOINT)"; else echo "etcd: stopped"; st=1; fi
  if [[ -f "$dir/apiserver.pid" ]] && alive "$(cat "$dir/apiserver.pid")"; then
    echo "kube-apiserver: running (pid $(cat "$dir/apiserver.pid"), $K8S_SERVER)"
  else
    echo "kube-apiserver: stopped"; st=1
  fi
  return $st
}

[[ $# -ge 1 ]] || usage
cmd="$1"; shift
case "$cmd" in
  up) cmd_up "$@" ;;
  down) cmd_down "$@" ;;
  restart-apiserver) cmd_restart_apiserver "$@" ;;
  stop-apiserver) cmd_stop_apiserver "$@" ;;
  start-apiserver) cmd_start_apiserver "$@" ;;
  compact) cmd_compact "$@" ;;
  env) cmd_env "$@" ;;
  status) cmd_status "$@" ;;
  -h|--help|help) usage ;;
  *) die "unknown command $cmd (up|down|restart-apiserver|stop-apiserver|start-apiserver|compact|env|status)" ;;
esac
