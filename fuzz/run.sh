#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 60) and prints, per target,
# the executions and executions per second. Exits non-zero on a crash, leaving
# the input under fuzz/artifacts/<target>/.
#
#   fuzz/run.sh 60
#
# libFuzzer through cargo-fuzz on a nightly toolchain when one is installed
# (else the stable one with RUSTC_BOOTSTRAP=1); if cargo-fuzz cannot build at
# all, the same target functions under the stable smoke harness
# (`cargo test --lib --no-default-features`, random mutations of the corpus).
# New inputs go to a scratch copy of each corpus: fuzz/corpus/ changes only
# when someone merges on purpose (see README.md).
set -euo pipefail
secs="${1:-60}"
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
cd "$root"

targets=(config_json kubeconfig watch_stream)
features=()
# The decoder targets need tattler's `fuzzing` feature (see README.md).
if grep -q '^fuzzing *=' Cargo.toml; then
    targets+=(decode_frames decode_list decode_protobuf scrub_bytes walk_depth http_response)
    features=(--features hook)
fi

toolchain=()
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    toolchain=(+nightly)
else
    export RUSTC_BOOTSTRAP=1
fi
if ! command -v cargo-fuzz >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked >/dev/null 2>&1 || true
fi

smoke() {
    echo "fuzz: cargo-fuzz unavailable; stable smoke harness for ${secs}s per target"
    (cd "$here" && TATTLER_FUZZ_SECS="$secs" cargo test --release --lib --no-default-features -- --nocapture --test-threads=1)
    exit $?
}

command -v cargo-fuzz >/dev/null 2>&1 || smoke
cargo "${toolchain[@]}" fuzz build -O --sanitizer none "${features[@]}" >/dev/null 2>&1 || smoke

# FUZZ_WORK=dir keeps the new inputs there (to merge into fuzz/corpus/, see README.md).
if [ -n "${FUZZ_WORK:-}" ]; then
    scratch="$FUZZ_WORK"
    mkdir -p "$scratch"
else
    scratch="$(mktemp -d)"
    trap 'rm -rf "$scratch"' EXIT
fi
status=0
for t in "${targets[@]}"; do
    mkdir -p "$scratch/$t"
    log="$scratch/$t.log"
    if cargo "${toolchain[@]}" fuzz run -O --sanitizer none "${features[@]}" "$t" "$scratch/$t" "fuzz/corpus/$t" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -timeout=20 -print_final_stats=1 >"$log" 2>&1; then
        result=ok
    else
        result=CRASH
        status=1
        grep -E 'panicked|ERROR|SUMMARY|Test unit written' "$log" | head -20 || true
    fi
    runs=$(grep -m1 'stat::number_of_executed_units' "$log" | awk '{print $2}')
    rate=$(grep -m1 'stat::average_exec_per_sec' "$log" | awk '{print $2}')
    echo "fuzz: $t: $result, ${runs:-?} executions (${rate:-?}/s, at most ${secs}s), $(ls "$scratch/$t" | wc -l) new corpus inputs"
done
exit $status
