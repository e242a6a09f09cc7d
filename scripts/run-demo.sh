#!/bin/sh
# Starts a private D-Bus session bus (no service directories) with gnome-keyring unlocked by a
# throw-away password, in a temporary HOME, runs keychain-demo against it and shows that
# secret-tool sees the same item. Everything it started is stopped and removed on exit.
# (secretd replaces gnome-keyring here once it exists.)
set -eu
demo=${1:-.build/debug/keychain-demo}
dir=$(mktemp -d /tmp/keychain-demo.XXXXXX)
chmod 700 "$dir"
pids=""
cleanup() {
    for pid in $pids; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT INT TERM

cat >"$dir/bus.conf" <<CONF
<busconfig>
  <type>session</type>
  <listen>unix:path=$dir/bus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/>
  </policy>
</busconfig>
CONF
dbus-daemon --config-file="$dir/bus.conf" --nofork --nopidfile 2>"$dir/bus.log" &
pids="$pids $!"
export DBUS_SESSION_BUS_ADDRESS="unix:path=$dir/bus"
export HOME="$dir/home" XDG_RUNTIME_DIR="$dir/run"
mkdir -p "$HOME" "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"
unset DISPLAY WAYLAND_DISPLAY

has_owner() {
    dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
        org.freedesktop.DBus.NameHasOwner "string:$1" 2>/dev/null | grep -q "boolean true"
}
tries=0
until [ -S "$dir/bus" ] && has_owner org.freedesktop.DBus; do
    tries=$((tries + 1)); [ $tries -lt 100 ] || { echo "run-demo: dbus-daemon did not start" >&2; exit 1; }
    sleep 0.1
done
head -c 18 /dev/urandom | base64 | gnome-keyring-daemon --foreground --components=secrets --unlock \
    >"$dir/provider.log" 2>&1 &
pids="$pids $!"
tries=0
until has_owner org.freedesktop.secrets; do
    tries=$((tries + 1)); [ $tries -lt 100 ] || { echo "run-demo: gnome-keyring did not start" >&2; cat "$dir/provider.log" >&2; exit 1; }
    sleep 0.1
done
echo "private session bus: $DBUS_SESSION_BUS_ADDRESS (gnome-keyring, unlocked)"
"$demo" </dev/null
printf 'secret-tool lookup service org.example.keychain-demo account demo -> '
secret-tool lookup service org.example.keychain-demo account demo | head -c 4
echo "… (same item, read by another client)"
