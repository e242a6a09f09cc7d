#!/bin/sh
# make install's one way to put a file in place: install -D -m MODE SOURCE DESTDIR/TARGET, unless
# TARGET belongs to a Debian package of the system being installed into (the dpkg database
# under DESTDIR, or this system's when DESTDIR is empty), which it never overwrites: it says so
# and goes on. gnome-keyring, for one, owns /usr/share/dbus-1/services/org.freedesktop.secrets.service.
# usage: install-unowned.sh DESTDIR MODE SOURCE TARGET
set -eu
destdir=$1 mode=$2 source=$3 target=$4
admindir="$destdir/var/lib/dpkg"
if [ -d "$admindir" ] && command -v dpkg-query >/dev/null 2>&1; then
    if owner=$(dpkg-query --admindir="$admindir" -S "$target" 2>/dev/null); then
        echo "make install: $target belongs to ${owner%%:*}; not overwritten" >&2
        exit 0
    fi
fi
install -D -m "$mode" "$source" "$destdir$target"
