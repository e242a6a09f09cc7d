#!/bin/sh
# Store/lookup latency through the library as the keyring grows, for secretd and gnome-keyring,
# each on its own private bus in a temporary HOME. Prints one table per provider.
#   bench/run.sh [SIZES...]     default: 100 1000 10000
#   PROVIDERS="secretd" bench/run.sh 100 10000    only some providers
# Build first (release is closer to real use): swift build -c release
set -eu
cd "$(dirname "$0")/.."
bin=${BIN:-$(swift build -c release --show-bin-path)}
sizes=${*:-100 1000 10000}
for provider in ${PROVIDERS:-secretd gnome-keyring}; do
    dir=$(mktemp -d /tmp/keychain-bench.XXXXXX)
    pids=""
    . scripts/private-bus.sh
    export HOME="$dir/home" XDG_RUNTIME_DIR="$dir/run" XDG_DATA_HOME="$dir/home/.local/share"
    mkdir -p "$HOME" "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
    if [ "$provider" = secretd ]; then
        printf 'bench-password' | "$bin/secretd" --unlock >"$dir/provider.log" 2>&1 &
    else
        printf 'bench-password' | gnome-keyring-daemon --foreground --components=secrets --unlock >"$dir/provider.log" 2>&1 &
    fi
    pids="$pids $!"
    until has_owner org.freedesktop.secrets; do sleep 0.1; done
    echo "== $provider"
    "$bin/keychain-bench" $sizes || true
    for pid in $pids; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$dir"
done
