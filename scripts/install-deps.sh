#!/bin/sh
# Installs the Debian packages named as arguments that are not installed yet.
# As root it runs apt-get; otherwise it names the missing packages and fails.
set -eu
if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "install-deps: not a Debian system; install the equivalents of: $*" >&2
    exit 1
fi
missing=""
for package in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $package"
    fi
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing Debian packages:$missing" >&2
    echo "install-deps: run: sudo apt-get install$missing" >&2
    exit 1
fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086 # the list is meant to split into words
apt-get install -y -qq --no-install-recommends $missing >/dev/null
