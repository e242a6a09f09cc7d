#!/bin/sh
# Fuzzes each target of a libFuzzer build of keychain-fuzz for a while (make fuzz).
#
#   scripts/fuzz.sh PROGRAM SECONDS WORKDIR [TARGET ...]
#
# Each target starts from a scratch copy of fuzz/corpus/TARGET (plus fuzz/regressions/TARGET,
# read only), so the committed corpus stays as it is; what libFuzzer finds stays in
# WORKDIR/TARGET/corpus, crashers in WORKDIR/artifacts/TARGET/, the log in WORKDIR/TARGET.log.
# FUZZ_JOBS targets run at once (default: one per core).
# Exits 1 when any target crashed, hung (-timeout), or went over the memory limit.
set -eu
program=$1 seconds=$2 work=$3
shift 3
targets=${*:-$("$program" --list | cut -f1)}
# Swift's backtracer would stop the crash report libFuzzer prints; a smaller ASan quarantine
# keeps the resident memory far from -rss_limit_mb.
export SWIFT_BACKTRACE=enable=no
export ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=64}
# Targets run FUZZ_JOBS at a time (default: one per core), each on a core of its own.
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}

# Fuzzes one target; its exit status lands in WORKDIR/TARGET.status.
fuzz_one() {
    target=$1 length=$2
    status=0
    "$program" "$target" "$work/$target/corpus" "fuzz/regressions/$target" -max_total_time="$seconds" \
        -max_len="$length" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$work/artifacts/$target/" >"$work/$target.log" 2>&1 || status=$?
    echo "$status" >"$work/$target.status"
}

# Says how one target went; adds it to $failed when it failed.
report() {
    target=$1
    status=$(cat "$work/$target.status")
    done_line=$(grep -a '^#[0-9]*.*DONE' "$work/$target.log" | tail -1)
    if [ "$status" -ne 0 ]; then
        failed="$failed $target"
        echo "fuzz: $target FAILED (status $status); the input is in $work/artifacts/$target/:" >&2
        ls "$work/artifacts/$target/" >&2
        grep -a -m 3 -E 'Fatal error|ERROR: libFuzzer|SUMMARY' "$work/$target.log" >&2 || true
        echo "fuzz: replay it with: .build/debug/keychain-fuzz $target FILE; then fix the code and" >&2
        echo "      keep the file as fuzz/regressions/$target/NAME (full log: $work/$target.log)" >&2
    else
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$target.log")
        speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/$target.log")
        coverage=$(echo "$done_line" | sed -n 's/.*\(cov: [0-9]* ft: [0-9]* corp: [^ ]*\).*/\1/p')
        echo "fuzz: $target: ${seconds} s, $runs runs ($speed/s), $coverage, no failure"
    fi
}

failed=""
batch=""
for target in $targets; do
    length=$("$program" --list | awk -F '\t' -v t="$target" '$1 == t { print $2 }')
    [ -n "$length" ] || { echo "fuzz: no target $target" >&2; exit 2; }
    rm -rf "$work/$target" "$work/artifacts/$target" "$work/$target.status"
    mkdir -p "$work/$target/corpus" "$work/artifacts/$target"
    cp fuzz/corpus/"$target"/* "$work/$target/corpus/"
    fuzz_one "$target" "$length" &
    batch="$batch $target"
    if [ "$(echo $batch | wc -w)" -ge "$jobs" ]; then
        wait
        for done_target in $batch; do report "$done_target"; done
        batch=""
    fi
done
wait
for done_target in $batch; do report "$done_target"; done
if [ -n "$failed" ]; then
    echo "fuzz: failures in:$failed" >&2
    exit 1
fi
