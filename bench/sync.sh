#!/bin/sh
# Sync of N items (default 1000) between two secretd on one machine, each with its own data
# directory, HOME and private bus, through a bare repository on a local path (the transport's
# own cost: no network). Prints, in seconds: the first publish (sync init + sync now), the
# joining machine's first pull of everything, an idle round, and a round with one change; and
# beside them the floor, `git fast-import` alone writing as many blobs of the same size (random
# bytes, as sealed items are) into a fresh repository.
#   bench/sync.sh [N]           BIN=.build/release (default: swift build --show-bin-path)
set -eu
cd "$(dirname "$0")/.."
count=${1:-1000}
bin=${BIN:-$(swift build --show-bin-path)}
root=$(mktemp -d /tmp/secretd-sync-bench.XXXXXX)
pids=""
trap 'for p in $pids; do kill $p 2>/dev/null || true; done; rm -rf "$root"' EXIT INT TERM

now() { date +%s.%N; }
seconds() { echo "$2 - $1" | bc; }

start_machine() {  # NAME: a bus and a secretd, unlocked; sets BUS_NAME
    dir="$root/$1"
    mkdir -p "$dir/home" "$dir/config"
    printf 'sync-interval = 3600\n' >"$dir/config/secretd.conf"
    # shellcheck source=../scripts/private-bus.sh
    . scripts/private-bus.sh
    echo "$DBUS_SESSION_BUS_ADDRESS" >"$dir/address"
    echo bench-password | HOME="$dir/home" "$bin/secretd" --foreground --unlock --data-dir "$dir/data" \
        --config-dir "$dir/config" >"$dir/secretd.log" 2>&1 &
    pids="$pids $!"
    for _ in $(seq 100); do
        has_owner org.freedesktop.secrets && return 0
        sleep 0.1
    done
    echo "secretd $1 did not start" >&2
    exit 1
}

on() {  # NAME COMMAND...: runs a command as machine NAME
    name=$1
    shift
    HOME="$root/$name/home" DBUS_SESSION_BUS_ADDRESS=$(cat "$root/$name/address") "$@"
}

start_machine a
start_machine b
git init --quiet --bare --initial-branch main "$root/remote.git"

# N items on A, imported in one call (a browser's CSV).
{
    echo "name,url,username,password"
    for i in $(seq "$count"); do echo "Site $i,https://site$i.example.com/,user$i,password-$i"; done
} >"$root/items.csv"
on a "$bin/secretctl" import "$root/items.csv" >/dev/null

t0=$(now)
on a "$bin/secretctl" sync init "$root/remote.git" >/dev/null
on a "$bin/secretctl" sync now >/dev/null
t1=$(now)
publish=$(seconds "$t0" "$t1")

device=$(on b "$bin/secretctl" sync join "$root/remote.git" | sed -n 's/^This machine is device \([0-9a-f]*\);.*/\1/p')
code=$(on b "$bin/secretctl" sync status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["code"])')
on a "$bin/secretctl" sync approve "$device" --code "$code" 2>/dev/null
t2=$(now)
on b "$bin/secretctl" sync now >/dev/null
t3=$(now)
pull=$(seconds "$t2" "$t3")

t4=$(now)
on a "$bin/secretctl" sync now >/dev/null
t5=$(now)
idle=$(seconds "$t4" "$t5")

printf 'changed' | on a "$bin/secretctl" set com.example.one edit >/dev/null
t6=$(now)
on a "$bin/secretctl" sync now >/dev/null
t7=$(now)
one=$(seconds "$t6" "$t7")

received=$(on b "$bin/secretctl" status --json | python3 -c 'import json,sys; print(sum(c["items"] for c in json.load(sys.stdin)["collections"]))')
[ "$received" = "$count" ] || { echo "the new machine holds $received items, not $count" >&2; exit 1; }
repo=$(du -sk "$root/remote.git" | cut -f1)

# The floor: as many blobs of the items' mean size, in one commit, by git fast-import alone.
size=$(git -C "$root/remote.git" ls-tree -l main items/ | awk '{ total += $4 } END { printf "%d", total / NR }')
python3 - "$count" "$size" "$root/floor.stream" <<'PY'
import os, sys
count, size, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
with open(path, "wb") as stream:
    stream.write(b"commit refs/heads/main\ncommitter floor <floor@localhost> 0 +0000\ndata 5\nfloor\n")
    for index in range(count):
        stream.write(b"M 100644 inline items/%032x\ndata %d\n" % (index, size))
        stream.write(os.urandom(size) + b"\n")
    stream.write(b"\n")
PY
git init --quiet --bare "$root/floor.git"
t8=$(now)
git -C "$root/floor.git" fast-import --quiet <"$root/floor.stream"
t9=$(now)
floor=$(seconds "$t8" "$t9")

printf 'sync of %s items (bin %s)\n' "$count" "$bin"
printf '  first publish (init + now):  %6.2f s\n' "$publish"
printf '  first pull on a new machine: %6.2f s\n' "$pull"
printf '  idle round:                  %6.2f s\n' "$idle"
printf '  round with one change:       %6.2f s\n' "$one"
printf '  repository size:             %6s KiB\n' "$repo"
printf '  floor: git fast-import of %s blobs of %s bytes: %6.2f s (first publish %.2fx, first pull %.2fx)\n' \
    "$count" "$size" "$floor" "$(echo "$publish / $floor" | bc -l)" "$(echo "$pull / $floor" | bc -l)"
