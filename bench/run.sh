#!/bin/sh
# `make bench`: the same workload against secretd and gnome-keyring, each on its own private bus
# with a fresh HOME, then one report with the ratios (bench/README.md explains every figure).
#   bench/run.sh [SIZES...]       default: 100 1000 3000 10000 100000
#   gnome-keyring runs only the sizes up to 3000 (it rewrites its whole file on every change).
#   PROVIDERS="secretd" bench/run.sh 100 1000     only some providers
#   BENCH_JSON=path                               where the JSON report goes (default bench/results.json)
# Build first, as make bench does (release is what users run): swift build -c release --static-swift-stdlib --disable-local-rpath
set -eu
cd "$(dirname "$0")/.."
bin=${BIN:-$(swift build -c release --show-bin-path)}
sizes=${*:-100 1000 3000 10000 100000}
out=${BENCH_JSON:-bench/results.json}
work=$(mktemp -d /tmp/keychain-bench.XXXXXX)
pids=""
# An interrupted run (Ctrl-C) leaves no bus or provider behind.
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
password=bench-password

python3 bench/commit-floor.py "$work" >"$work/commit-floor.json"
# A provider that does no work, answering on its main loop and in GDBus's thread: what GDBus and
# libsecret alone cost a lookup (bench/README.md).
for mode in main-loop worker-thread; do
    dir="$work/no-work-$mode"
    mkdir -p "$dir"
    pids=""
    . scripts/private-bus.sh
    private_home
    "$bin/keychain-bench" --serve-no-work "$mode" >"$dir/provider.log" 2>&1 &
    pids="$pids $!"
    wait_for_owner org.freedesktop.secrets "$dir/provider.log" "bench (no-work provider, $mode)"
    "$bin/keychain-bench" --lookups 3000 >"$work/no-work-$mode.json"
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
done
reports=""
for provider in ${PROVIDERS:-secretd gnome-keyring}; do
    these=""
    for size in $sizes; do
        if [ "$provider" = secretd ] || [ "$size" -le 3000 ]; then these="$these${these:+,}$size"; fi
    done
    [ -n "$these" ] || continue
    dir="$work/$provider"
    mkdir -p "$dir"
    pids=""
    . scripts/private-bus.sh
    private_home
    export XDG_DATA_HOME="$HOME/.local/share" XDG_CONFIG_HOME="$HOME/.config"
    started=$(date +%s%N)
    if [ "$provider" = secretd ]; then
        printf %s "$password" | "$bin/secretd" --unlock >"$dir/provider.log" 2>&1 &
        data="$XDG_DATA_HOME/secretd"
    else
        printf %s "$password" | gnome-keyring-daemon --foreground --components=secrets --unlock >"$dir/provider.log" 2>&1 &
        data="$XDG_DATA_HOME/keyrings"
    fi
    pid=$!
    pids="$pids $pid"
    wait_for_owner org.freedesktop.secrets "$dir/provider.log" "bench ($provider)"
    startup_ms=$(( ($(date +%s%N) - started) / 1000000 ))
    echo "== $provider (sizes $these; started and unlocked in $startup_ms ms)" >&2
    "$bin/keychain-bench" --sizes "$these" --provider-pid "$pid" --data-dir "$data" --password "$password" \
        --secretctl "$bin/secretctl" >"$dir/report.json"
    python3 - "$dir/report.json" "$provider" "$startup_ms" <<'PY'
import json, sys
path, name, startup = sys.argv[1], sys.argv[2], int(sys.argv[3])
report = json.load(open(path))
report["provider"], report["startup_to_name_ms"] = name, startup
json.dump(report, open(path, "w"))
PY
    reports="$reports $dir/report.json"
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
done
python3 bench/report.py "$work/commit-floor.json" $reports --no-work "$work/no-work-main-loop.json" \
    "$work/no-work-worker-thread.json" --out "$out"
