#!/bin/sh
# Sync of N items (default 1000) between two secretd on one machine, each with its own data
# directory, HOME and private bus, through a bare repository on a local path (the transport's
# own cost: no network). Prints, in seconds: the first publish (sync init + sync now), the
# joining machine's first pull of everything, an idle round, a round with one change, a round
# with 100 changes and the other machine's round that takes them in; and beside them git's own
# floors: `git fast-import` alone writing as many blobs of the same size (random bytes, as
# sealed items are) into a fresh repository, and a commit of 100 changed blobs on top of that
# one by fast-import, pushed to a bare copy.
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

# 100 changes: new passwords for 100 of the items (an import that replaces them); then the
# other machine takes them in.
changes=$((count < 100 ? count : 100))
{
    echo "name,url,username,password"
    for i in $(seq "$changes"); do echo "Site $i,https://site$i.example.com/,user$i,changed-$i"; done
} >"$root/changes.csv"
on a "$bin/secretctl" import --replace "$root/changes.csv" >/dev/null
t10=$(now)
on a "$bin/secretctl" sync now >/dev/null
t11=$(now)
hundred=$(seconds "$t10" "$t11")
t12=$(now)
on b "$bin/secretctl" sync now >/dev/null
t13=$(now)
hundred_in=$(seconds "$t12" "$t13")
[ "$(on b secret-tool lookup server site1.example.com user user1)" = "changed-1" ] || { echo "the change did not reach the other machine" >&2; exit 1; }

received=$(on b "$bin/secretctl" status --json | python3 -c 'import json,sys; print(sum(c["items"] for c in json.load(sys.stdin)["collections"]))')
[ "$received" = $((count + 1)) ] || { echo "the new machine holds $received items, not $((count + 1))" >&2; exit 1; }
repo=$(du -sk "$root/remote.git" | cut -f1)

# fast_import_stream COUNT SIZE [PARENT]: a git fast-import stream of one commit on main (on
# PARENT when given) of COUNT files items/NNN of SIZE random bytes.
fast_import_stream() {
    python3 - "$@" <<'PY'
import os, sys
count, size = int(sys.argv[1]), int(sys.argv[2])
out = sys.stdout.buffer
out.write(b"commit refs/heads/main\ncommitter floor <floor@localhost> 0 +0000\ndata 5\nfloor\n")
if len(sys.argv) > 3:
    out.write(b"from %s\n" % sys.argv[3].encode())
for index in range(count):
    out.write(b"M 100644 inline items/%032x\ndata %d\n" % (index, size))
    out.write(os.urandom(size) + b"\n")
out.write(b"\n")
PY
}

# The floor: as many blobs of the items' mean size, in one commit, by git fast-import alone.
size=$(git -C "$root/remote.git" ls-tree -l main items/ | awk '{ total += $4 } END { printf "%d", total / NR }')
fast_import_stream "$count" "$size" >"$root/floor.stream"
git init --quiet --bare "$root/floor.git"
t8=$(now)
git -C "$root/floor.git" fast-import --quiet <"$root/floor.stream"
t9=$(now)
floor=$(seconds "$t8" "$t9")

# git's floor of a round with 100 changes: a commit of 100 changed blobs on top of that one, by
# fast-import, pushed to a bare copy of the repository.
git clone --quiet --bare "$root/floor.git" "$root/floor-remote.git"
git -C "$root/floor.git" remote add origin "$root/floor-remote.git"
fast_import_stream "$changes" "$size" "refs/heads/main^0" >"$root/change.stream"
t14=$(now)
git -C "$root/floor.git" fast-import --quiet <"$root/change.stream"
git -C "$root/floor.git" push --quiet origin main
t15=$(now)
change_floor=$(seconds "$t14" "$t15")

printf 'sync of %s items (bin %s)\n' "$count" "$bin"
printf '  first publish (init + now):  %6.2f s\n' "$publish"
printf '  first pull on a new machine: %6.2f s\n' "$pull"
printf '  idle round:                  %6.2f s\n' "$idle"
printf '  round with one change:       %6.2f s\n' "$one"
printf '  round with %s changes:      %6.2f s; the other machine takes them in: %.2f s\n' "$changes" "$hundred" "$hundred_in"
printf '  repository size:             %6s KiB\n' "$repo"
printf '  floor: git fast-import of %s blobs of %s bytes: %6.2f s (first publish %.2fx, first pull %.2fx)\n' \
    "$count" "$size" "$floor" "$(echo "$publish / $floor" | bc -l)" "$(echo "$pull / $floor" | bc -l)"
printf '  floor: a commit of %s changed blobs on it by git fast-import, pushed: %6.2f s\n' "$changes" "$change_floor"
