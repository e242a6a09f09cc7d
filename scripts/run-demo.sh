#!/bin/sh
# `make demo`: starts a private D-Bus session bus (no service directories) with secretd
# unlocked by a throw-away password, in a temporary HOME, runs keychain-demo against it and
# shows that secret-tool sees the same item. Everything it started is stopped and removed.
set -eu
bin=${1:?usage: run-demo.sh BIN-DIR}
demo="$bin/keychain-demo"
secretd="$bin/secretd"
. "$(dirname "$0")/exit-cleanup.sh"
dir=$(mktemp -d /tmp/keychain-demo.XXXXXX)
chmod 700 "$dir"
scratch=$dir

. "$(dirname "$0")/private-bus.sh"
private_home
unset DISPLAY WAYLAND_DISPLAY

head -c 18 /dev/urandom | base64 | "$secretd" --foreground --unlock --data-dir "$dir/data" \
    >"$dir/provider.log" 2>&1 &
pids="$pids $!"
wait_for_owner org.freedesktop.secrets "$dir/provider.log" run-demo
echo "private session bus: $DBUS_SESSION_BUS_ADDRESS (secretd, unlocked)"
"$demo" </dev/null
printf 'secret-tool lookup service org.example.keychain-demo account demo -> '
secret-tool lookup service org.example.keychain-demo account demo | head -c 4
echo "… (same item, read by another client)"
