#!/bin/sh
# `make demo`: starts a private D-Bus session bus (no service directories) with secretd
# unlocked by a throw-away password, in a temporary HOME, runs keychain-demo against it and
# shows that secret-tool sees the same item. Everything it started is stopped and removed.
set -eu
bin=${1:?usage: run-demo.sh BIN-DIR}
demo="$bin/keychain-demo"
secretd="$bin/secretd"
dir=$(mktemp -d /tmp/keychain-demo.XXXXXX)
chmod 700 "$dir"
pids=""
cleanup() {
    for pid in $pids; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT INT TERM

. "$(dirname "$0")/private-bus.sh"
export HOME="$dir/home" XDG_RUNTIME_DIR="$dir/run"
mkdir -p "$HOME" "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"
unset DISPLAY WAYLAND_DISPLAY

head -c 18 /dev/urandom | base64 | "$secretd" --foreground --unlock --data-dir "$dir/data" \
    >"$dir/provider.log" 2>&1 &
pids="$pids $!"
tries=0
until has_owner org.freedesktop.secrets; do
    tries=$((tries + 1)); [ $tries -lt 100 ] || { echo "run-demo: secretd did not start" >&2; cat "$dir/provider.log" >&2; exit 1; }
    sleep 0.1
done
echo "private session bus: $DBUS_SESSION_BUS_ADDRESS (secretd, unlocked)"
"$demo" </dev/null
printf 'secret-tool lookup service org.example.keychain-demo account demo -> '
secret-tool lookup service org.example.keychain-demo account demo | head -c 4
echo "… (same item, read by another client)"
