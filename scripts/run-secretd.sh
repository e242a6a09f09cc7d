#!/bin/sh
# `make run`: starts secretd in the foreground on the session bus, or on a private session bus
# when there is none, unlocked with a password it asks for (on a terminal) or reads on stdin.
# Data lives where secretd keeps it by default ($XDG_DATA_HOME/secretd).
set -eu
secretd=${1:?usage: run-secretd.sh PATH-TO-SECRETD}
. "$(dirname "$0")/exit-cleanup.sh"

if [ -z "${DBUS_SESSION_BUS_ADDRESS:-}" ] && [ ! -S "${XDG_RUNTIME_DIR:-/nonexistent}/bus" ]; then
    dir=$(mktemp -d /tmp/secretd-bus.XXXXXX)
    chmod 700 "$dir"
    scratch=$dir
    . "$(dirname "$0")/private-bus.sh"
    echo "No session bus here: started a private one. To talk to secretd from another shell:"
    echo "  export DBUS_SESSION_BUS_ADDRESS='$DBUS_SESSION_BUS_ADDRESS'"
fi
echo "Then, for example:"
echo "  secret-tool store --label=test service demo account me     # type a secret"
echo "  secret-tool lookup service demo account me"
echo "secretd runs in the foreground; stop it with Ctrl-C."
if [ -t 0 ]; then
    echo "Enter the login keyring's password (a new keyring is created with it on first run)."
fi
"$secretd" --foreground --unlock
