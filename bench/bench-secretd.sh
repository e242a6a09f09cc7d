# Sourced by bench/sync.sh and bench/bulk.sh (from the repository's root, with "$root", "$bin"
# and "$pids" set): secretd instances for a bench, each with its own private bus, HOME, data and
# configuration directories under "$root/NAME".
#   start_bench_secretd NAME [CONFIG]  starts one, unlocked, with CONFIG as its secretd.conf;
#                                      writes its bus address to "$root/NAME/address" and its
#                                      pid to "$root/NAME/pid"; exits 1 if it does not start
#   on NAME COMMAND...                 runs COMMAND with NAME's HOME and bus

start_bench_secretd() {
    dir="$root/$1"
    mkdir -p "$dir/home" "$dir/config"
    [ -z "${2:-}" ] || printf '%s\n' "$2" >"$dir/config/secretd.conf"
    # shellcheck source=../scripts/private-bus.sh
    . scripts/private-bus.sh
    echo "$DBUS_SESSION_BUS_ADDRESS" >"$dir/address"
    echo bench-password | HOME="$dir/home" "$bin/secretd" --foreground --unlock --data-dir "$dir/data" \
        --config-dir "$dir/config" >"$dir/secretd.log" 2>&1 &
    echo $! >"$dir/pid"
    pids="$pids $!"
    for _ in $(seq 100); do
        has_owner org.freedesktop.secrets && return 0
        sleep 0.1
    done
    echo "secretd $1 did not start" >&2
    cat "$dir/secretd.log" >&2
    exit 1
}

on() {  # (sh has no local variables: this one's name must not be one a caller uses)
    bench_machine=$1
    shift
    HOME="$root/$bench_machine/home" DBUS_SESSION_BUS_ADDRESS=$(cat "$root/$bench_machine/address") "$@"
}
