#!/usr/bin/env bash
# Build kube-apiserver, kubectl (k8s.io/kubernetes) and a small embedded etcd
# from the Go module in this directory, and cache them by version.
#
#   tests/k8s/build.sh [VERSION]  -> last line of stdout is the bin dir
#   tests/k8s/build.sh all        -> builds every version, one bin dir a line
#
# VERSION is a Kubernetes minor: 1.37 (the default, the newest) or 1.36; the
# argument wins over TATTLER_K8S_VERSION. The newest is go.mod/go.sum, each
# older one k8s-<minor>.mod/.sum beside it (go build -modfile), so that all
# share cmd/ and one module root.
#
# Cache: ${TATTLER_K8S_CACHE:-/var/cache/tattler-k8s}/<k8s-version>-<etcd-version>/bin/
# A cached bin dir is reused as long as its stamp (a hash of the version's
# .mod and .sum and cmd/) matches; set TATTLER_K8S_REBUILD=1 to force a rebuild.
# Progress goes to stderr; only the bin dir is printed on stdout.
# The first build compiles all of kube-apiserver: ~4-17 min on 2 cores.
#
# Env:
#   TATTLER_K8S_VERSION  1.37 (default) or 1.36, when no argument is given
#   TATTLER_K8S_CACHE    cache root (default /var/cache/tattler-k8s, falls back
#                        to ~/.cache/tattler-k8s when that is not writable)
#   TATTLER_K8S_REBUILD  1 = ignore the cache
#   TATTLER_K8S_NICE     niceness for the go build (default 15)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
log() { echo "build.sh: $*" >&2; }
die() { echo "build.sh: ERROR: $*" >&2; exit 1; }

# Newest first; the first is the default and lives in go.mod.
versions=(1.37 1.36)

want="${1:-${TATTLER_K8S_VERSION:-${versions[0]}}}"
if [[ "$want" == all ]]; then
  for v in "${versions[@]}"; do "$0" "$v" | tail -n 1; done
  exit 0
fi
case "$want" in
  "${versions[0]}") modfile=go.mod ;;
  1.36) modfile="k8s-$want.mod" ;;
  *) die "unknown Kubernetes version '$want' (one of: ${versions[*]}, all)" ;;
esac
sumfile="${modfile%.mod}.sum"

modver() { # module path -> version from the mod file (handles both require forms)
  awk -v m="$1" '
    $1 == m && $2 ~ /^v/ { print $2; exit }
    $1 == "require" && $2 == m { print $3; exit }
  ' "$here/$modfile"
}

k8s_version="$(modver k8s.io/kubernetes)"
etcd_version="$(modver go.etcd.io/etcd/server/v3)"
[[ -n "$k8s_version" ]] || die "cannot find k8s.io/kubernetes version in $here/$modfile"
[[ -n "$etcd_version" ]] || die "cannot find go.etcd.io/etcd/server/v3 version in $here/$modfile"
[[ "$k8s_version" == "v$want".* ]] || die "$modfile holds k8s.io/kubernetes $k8s_version, not $want"

cache_root="${TATTLER_K8S_CACHE:-/var/cache/tattler-k8s}"
if ! mkdir -p "$cache_root" 2>/dev/null || [[ ! -w "$cache_root" ]]; then
  if [[ -n "${TATTLER_K8S_CACHE:-}" ]]; then
    die "cache dir $cache_root is not writable"
  fi
  cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/tattler-k8s"
  log "/var/cache/tattler-k8s not writable, using $cache_root"
  mkdir -p "$cache_root"
fi

key="${k8s_version}-${etcd_version}"
dest="$cache_root/$key"
bin="$dest/bin"
binaries=(kube-apiserver kubectl etcd)

stamp="$(cd "$here" && find "$modfile" "$sumfile" cmd -type f -print0 | LC_ALL=C sort -z \
  | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)"

cached_ok() {
  [[ -f "$bin/.stamp" && "$(cat "$bin/.stamp")" == "$stamp" ]] || return 1
  local b
  for b in "${binaries[@]}"; do [[ -x "$bin/$b" ]] || return 1; done
}

if [[ "${TATTLER_K8S_REBUILD:-0}" != 1 ]] && cached_ok; then
  log "using cached binaries ($key)"
  echo "$bin"
  exit 0
fi

command -v go >/dev/null 2>&1 || die "go is not installed (need go >= 1.26; see go.mod)"

# One build at a time per cache key (several test runs may start together).
mkdir -p "$dest"
exec 9>"$dest/.lock"
if ! flock -n 9; then
  log "another build of $key is running, waiting for it"
  flock 9
fi
if [[ "${TATTLER_K8S_REBUILD:-0}" != 1 ]] && cached_ok; then
  log "using binaries built concurrently ($key)"
  echo "$bin"
  exit 0
fi

log "building k8s $k8s_version, etcd $etcd_version with $(go version) into $bin"
k8s_minor="${k8s_version#v1.}"; k8s_minor="${k8s_minor%%.*}"
vx=()
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  vx+=("-X=$pkg.gitVersion=$k8s_version" "-X=$pkg.gitMajor=1" "-X=$pkg.gitMinor=$k8s_minor"
       "-X=$pkg.gitTreeState=clean" "-X=$pkg.buildDate=1970-01-01T00:00:00Z")
done
ldflags="-s -w ${vx[*]}"

tmp="$(mktemp -d "$dest/bin.tmp.XXXXXX")"
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT

cd "$here"
export GOFLAGS="${GOFLAGS:-} -mod=mod -buildvcs=false"
# go.mod must exist (it marks the module root) even when another file is used.
[[ "$modfile" == go.mod ]] || export GOFLAGS="$GOFLAGS -modfile=$modfile"
# Download first so a registry failure is reported as such.
if ! go mod download >&2; then
  die "go mod download failed (is the Go module proxy reachable? GOPROXY=$(go env GOPROXY))"
fi
start=$(date +%s)
log "compiling (once; 9 to 17 min on a fresh 2-core machine, 2026-12-02)"
# A line every 30 s, so that a first `cargo test` does not look hung.
# (Not on stdout, whose end the caller waits for, nor holding the build lock.)
( exec 9>&- 1>&2; while sleep 30; do log "still compiling kube-apiserver, kubectl and etcd: $(( $(date +%s) - start )) s"; done ) &
ticker=$!
trap 'kill "$ticker" 2>/dev/null; rm -rf "$tmp"' EXIT
nice -n "${TATTLER_K8S_NICE:-15}" go build -trimpath -ldflags="$ldflags" -o "$tmp/" \
  k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kubectl \
  ./cmd/etcd >&2 || die "go build failed"
kill "$ticker" 2>/dev/null || true
for b in "${binaries[@]}"; do [[ -x "$tmp/$b" ]] || die "build produced no $b"; done
echo "$stamp" >"$tmp/.stamp"
log "built in $(( $(date +%s) - start ))s"

rm -rf "$bin.old"
[[ -e "$bin" ]] && mv "$bin" "$bin.old"
mv "$tmp" "$bin"
rm -rf "$bin.old"
trap - EXIT
echo "$bin"
