# Sourced by the scripts that start processes (run-secretd.sh, run-demo.sh, leak-check.sh,
# bench/run.sh, bench/cpu-split.sh), before they start any: at exit, however it comes, the
# processes in "$pids" are stopped and waited for, then the script's own after_stopping runs
# (when it defines one), then the directory "$scratch" (when set) is removed. Interrupted
# (Ctrl-C, kill): exit at once, which runs the cleanup once.
pids=""
scratch=""
cleanup() {
    for pid in $pids; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if command -v after_stopping >/dev/null 2>&1; then after_stopping; fi
    [ -z "$scratch" ] || rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
