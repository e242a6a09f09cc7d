#!/bin/sh
# What one client's large writes cost another: an ordinary client asks ReadAlias every 10 ms
# (scripts/dbus-clients/pinger.py) alone, then beside a client that stores large items as fast as
# secretd takes them (large-writer.py), for each shape of item below; prints the pinger's median,
# 99th percentile and maximum latency, and the writer's store times, in ms. Beside each, the
# floor: the same two clients against a stand-in that stores nothing (keychain-bench
# --serve-stand-in, sd-bus on one thread as secretd), i.e. what the bus alone costs the pinger.
# The 8 MiB writer's shape is run twice more: beside a client storing small items as fast as it
# can (its writes wait for the large ones': one SQLite writer at a time; the pinger should not),
# and as one item whose secret is set again and again (Item.SetSecret) rather than new items;
# the last shapes send batches of 1,000 small items at once (secretd's Import1.ImportItems, as
# `secretctl import` does; the stand-in answers it at once), the second beside a client renaming
# an item of its own every 5 ms (Properties.Set, a write that is not a Secret Service method).
#   bench/stall.sh [SECONDS]     default 10 s a shape
# Uses the release build (make bench builds it, or: swift build -c release --static-swift-stdlib
# --disable-local-rpath; BIN= another directory), on a private bus.
set -eu
cd "$(dirname "$0")/.."
seconds=${1:-10}
bin=${BIN:-$(swift build -c release --show-bin-path)}
for program in secretd keychain-bench; do
    [ -x "$bin/$program" ] || { echo "stall: no $bin/$program; build the release first (make bench does)" >&2; exit 1; }
done
. scripts/exit-cleanup.sh
dir=$(mktemp -d /tmp/keychain-stall.XXXXXX)
scratch=$dir
. scripts/private-bus.sh
private_home
clients=scripts/dbus-clients

# Each shape starts on an empty keyring of its own, so that one shape's items (and the
# writer's quota they use up) do not weigh on the next. `start_provider NAME stand-in` starts the
# floor's stand-in instead.
start_provider() {
    export XDG_DATA_HOME="$HOME/$1/share" XDG_CONFIG_HOME="$HOME/$1/config"
    if [ "${2:-}" = stand-in ]; then
        "$bin/keychain-bench" --serve-stand-in >"$dir/provider.log" 2>&1 &
    else
        printf 'bench-password' | "$bin/secretd" --unlock >"$dir/provider.log" 2>&1 &
    fi
    provider_pid=$!
    pids="$pids $provider_pid"
    wait_for_owner org.freedesktop.secrets "$dir/provider.log" "${2:-secretd}"
}
stop_provider() {
    kill "$provider_pid"
    wait "$provider_pid" 2>/dev/null || true
    rm -rf "$XDG_DATA_HOME"
}

# One measurement: the pinger alone or beside the writer of shape NAME (the rest of the shape's
# line; last, `with-small-writer`: a second client storing small items as fast as it can too,
# or `set-secret`: the writer sets one item's secret again and again);
# sets `pinged` (median p99 max) and `written` (the writer's stores, or -).
measure() {
    name=$1 count=$2 size=$3 secret=$4 also=${5:-}
    writer="" small=""
    if [ "$name" != none ]; then
        mode=""
        case $also in set-secret | import) mode=$also ;; import+label-setter) mode=import ;; esac
        /usr/bin/python3 -B "$clients/large-writer.py" "$seconds" "$count" "$size" "$secret" "$name" $mode >"$dir/writer.json" &
        writer=$!
    fi
    if [ "$also" = with-small-writer ]; then
        /usr/bin/python3 -B "$clients/large-writer.py" "$seconds" 2 16 32 small >/dev/null &
        small=$!
    elif [ "$also" = import+label-setter ]; then
        /usr/bin/python3 -B "$clients/label-setter.py" "$seconds" >/dev/null &
        small=$!
    fi
    [ -z "$writer" ] || sleep 0.5
    pinger=$(/usr/bin/python3 -B "$clients/pinger.py" "$((seconds - 1))")
    [ -z "$writer" ] || wait "$writer"
    [ -z "$small" ] || wait "$small"
    pinged=$(echo "$pinger" | python3 -c 'import json,sys; r=json.load(sys.stdin); print("%9s %9s %9s" % (r["median_ms"], r["p99_ms"], r["max_ms"]))')
    if [ -n "$writer" ]; then
        written=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("%s, %s/%s%s" % (r["stored"], r["median_ms"], r["max_ms"], ", refused: " + r["refusal"] if r["refusal"] else ""))' "$dir/writer.json")
    else
        written="-"
    fi
}

# The shapes: name, attributes, bytes per attribute value, secret bytes.
printf '%-34s %9s %9s %9s %9s   %s\n' "writer's items" "median" "p99" "max" "floor p99" "writer (stores, median/max ms; floor's)"
printf '%-34s %9s\n' "" "ReadAlias latency of the other client, ms"
while read -r name count size secret also; do
    [ -n "$name" ] || continue
    start_provider "$name" stand-in
    measure "$name" "$count" "$size" "$secret" "$also"
    floor_p99=$(echo "$pinged" | awk '{print $2}') floor_written=$(echo "$written" | cut -d, -f1)
    stop_provider
    start_provider "$name"
    measure "$name" "$count" "$size" "$secret" "$also"
    stop_provider
    printf '%-34s %s %9s   %s\n' "$name" "$pinged" "$floor_p99" "$written${writer:+; $floor_written}"
done <<'SHAPES'
none 0 0 0
small:2x16B,32B 2 16 32
issue-44:255x64KiB 255 65536 32
attributes:16x4KiB 16 4096 32
attributes:limit(64KiB) 15 4000 32
secret:1MiB 2 16 1048576
secret:8MiB 2 16 8388608
secret:8MiB+small-writer 2 16 8388608 with-small-writer
secret:8MiB-set-again 2 16 8388608 set-secret
import:1000x(3x24B,24B) 3 24 24 import
import+label-setter 3 24 24 import+label-setter
SHAPES
