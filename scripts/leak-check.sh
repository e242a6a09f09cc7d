#!/bin/sh
# `make leaks`: secretd built with AddressSanitizer (its LeakSanitizer reports, at exit, every
# block nothing points to any more) serves OPERATIONS operations of scripts/leak-workload.py on
# a private bus, then stops on SIGTERM. Fails if the workload failed, if secretd did not exit
# cleanly, or if LeakSanitizer found a leak not covered by scripts/lsan.supp (GLib's one-time
# allocations only).
set -eu
secretd=${1:?usage: leak-check.sh SECRETD [OPERATIONS]}
operations=${2:-10000}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/exit-cleanup.sh"
dir=$(mktemp -d /tmp/keychain-leaks.XXXXXX)
chmod 700 "$dir"
scratch=$dir
# Kept for a look after a failure.
after_stopping() { cp "$dir/secretd.log" /tmp/last-leak-secretd.log 2>/dev/null || true; }

. "$here/private-bus.sh"
private_home
password=$(head -c 18 /dev/urandom | base64)

# Swift's runtime keeps its metadata caches in globals (reachable, not leaks); GLib's one-time
# allocations are listed in lsan.supp.
printf '%s' "$password" | \
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1:atexit=1 \
    LSAN_OPTIONS="suppressions=$here/lsan.supp:print_suppressions=1:report_objects=0" \
    G_SLICE=always-malloc G_DEBUG=gc-friendly \
    "$secretd" --foreground --unlock --data-dir "$dir/data" --config-dir "$dir/config" >"$dir/secretd.log" 2>&1 &
daemon=$!
wait_for_owner org.freedesktop.secrets "$dir/secretd.log" leak-check
rss_start=$(awk '/VmRSS/ { print $2 }' "/proc/$daemon/status")
start=$(date +%s)
status=0
printf '%s\n' "$password" | /usr/bin/python3 "$here/leak-workload.py" "$operations" || status=$?
elapsed=$(( $(date +%s) - start ))
rss_end=$(awk '/VmRSS/ { print $2 }' "/proc/$daemon/status")
kill -TERM "$daemon"
daemon_status=0
wait "$daemon" || daemon_status=$?
echo "leak-check: $operations operations in ${elapsed} s; secretd (ASan) RSS ${rss_start} KiB before, ${rss_end} KiB after; exit status $daemon_status"
if grep -q "ERROR: LeakSanitizer\|ERROR: AddressSanitizer" "$dir/secretd.log"; then
    sed -n '/ERROR: \(Leak\|Address\)Sanitizer/,$p' "$dir/secretd.log" | head -150 >&2
    echo "leak-check: FAILED: the sanitizer reported the errors above" >&2
    exit 1
fi
grep -A20 "Suppressions used" "$dir/secretd.log" || echo "leak-check: no suppression was needed"
[ "$status" -eq 0 ] || { echo "leak-check: FAILED: the workload failed" >&2; exit 1; }
[ "$daemon_status" -eq 0 ] || { echo "leak-check: FAILED: secretd exited with $daemon_status" >&2; tail -20 "$dir/secretd.log" >&2; exit 1; }
echo "leak-check: no leaks"
