#!/bin/sh
# What one client's large writes cost another: an ordinary client asks ReadAlias every 10 ms
# (scripts/dbus-clients/pinger.py) alone, then beside a client that stores large items as fast as
# secretd takes them (large-writer.py), for each shape of item below; prints the pinger's median,
# 99th percentile and maximum latency, and the writer's store times, in ms.
#   bench/stall.sh [SECONDS]     default 10 s a shape
# Uses the release build (make bench builds it, or: swift build -c release --static-swift-stdlib
# --disable-local-rpath; BIN= another directory), on a private bus.
set -eu
cd "$(dirname "$0")/.."
seconds=${1:-10}
bin=${BIN:-$(swift build -c release --show-bin-path)}
[ -x "$bin/secretd" ] || { echo "stall: no $bin/secretd; build the release first (make bench does)" >&2; exit 1; }
. scripts/exit-cleanup.sh
dir=$(mktemp -d /tmp/keychain-stall.XXXXXX)
scratch=$dir
. scripts/private-bus.sh
private_home
clients=scripts/dbus-clients

# Each shape starts on an empty keyring of its own, so that one shape's items (and the
# writer's quota they use up) do not weigh on the next.
start_secretd() {
    export XDG_DATA_HOME="$HOME/$1/share" XDG_CONFIG_HOME="$HOME/$1/config"
    printf 'bench-password' | "$bin/secretd" --unlock >"$dir/secretd.log" 2>&1 &
    secretd_pid=$!
    pids="$pids $secretd_pid"
    wait_for_owner org.freedesktop.secrets "$dir/secretd.log" secretd
}
stop_secretd() {
    kill "$secretd_pid"
    wait "$secretd_pid" 2>/dev/null || true
    rm -rf "$XDG_DATA_HOME"
}

# The shapes: name, attributes, bytes per attribute value, secret bytes.
printf '%-34s %9s %9s %9s   %s\n' "writer's items" "median" "p99" "max" "writer (stores, median/max ms)"
printf '%-34s %9s\n' "" "ReadAlias latency of the other client, ms"
while read -r name count size secret; do
    [ -n "$name" ] || continue
    start_secretd "$name"
    if [ "$name" = none ]; then
        writer=""
    else
        /usr/bin/python3 -B "$clients/large-writer.py" "$seconds" "$count" "$size" "$secret" "$name" >"$dir/writer.json" &
        writer=$!
        sleep 0.5
    fi
    pinger=$(/usr/bin/python3 -B "$clients/pinger.py" "$((seconds - 1))")
    [ -z "$writer" ] || wait "$writer"
    summary=$(echo "$pinger" | python3 -c 'import json,sys; r=json.load(sys.stdin); print("%9s %9s %9s" % (r["median_ms"], r["p99_ms"], r["max_ms"]))')
    if [ -n "$writer" ]; then
        written=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("%s, %s/%s%s" % (r["stored"], r["median_ms"], r["max_ms"], ", refused: " + r["refusal"] if r["refusal"] else ""))' "$dir/writer.json")
    else
        written="-"
    fi
    printf '%-34s %s   %s\n' "$name" "$summary" "$written"
    stop_secretd
done <<'SHAPES'
none 0 0 0
small:2x16B,32B 2 16 32
issue-44:255x64KiB 255 65536 32
attributes:16x4KiB 16 4096 32
attributes:limit(64KiB) 15 4000 32
secret:1MiB 2 16 1048576
secret:8MiB 2 16 8388608
SHAPES
