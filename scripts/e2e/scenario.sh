#!/bin/bash
# The make e2e scenarios (scenarios/NN-NAME.sh), run as root inside the booted container by
# scripts/e2e.sh:
#     bash /usr/local/lib/e2e/scenario.sh first-boot [NAME,...]   (then the machine reboots)
#     bash /usr/local/lib/e2e/scenario.sh second-boot [NAME,...]
#     bash /usr/local/lib/e2e/scenario.sh needs NAME              only the state NAME needs
# and, anywhere (e2e.sh runs them on the host from the clone):
#     bash scripts/e2e/scenario.sh list                    NAME, boot, needs, what it proves
#     bash scripts/e2e/scenario.sh select NAME,...         "BOOT NAME" in run order; exit 2 on
#                                                          an unknown name, listing them all
# What people do on a Debian 13 or 12 machine after `apt install` of the packages: the
# administrator makes secretd everyone's login keyring, users log in over ssh with passwords and
# keys, use su and passwd, root resets a password, and at the end the administrator undoes the
# setup. Users log in through the machine's own sshd on 127.0.0.1, exactly as from another machine.
#
# Each scenario file starts with a comment saying what it proves, then two header lines:
#     # boot: first|second    the boot it runs in (second: after the reboot that follows the
#                             upgrade; alone, the machine is rebooted before it too)
#     # needs: STATE...       the state it needs (state.sh), established first when missing
# and defines the function scenario. first-boot and second-boot run that boot's scenarios in
# the order of their numbers, each in a subshell after need for each of its states; in the full
# run the scenarios before it left those, so need does nothing.

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
# shellcheck source=state.sh
. "$here/state.sh"
SCENARIOS=$here/scenarios

# scenario_files: every scenario, in run order.
scenario_files() { find "$SCENARIOS" -maxdepth 1 -name '[0-9]*-*.sh' | sort; }
# scenario_name FILE: NAME of scenarios/NN-NAME.sh.
scenario_name() { basename "$1" .sh | sed 's/^[0-9]*-//'; }
# header FILE KEY: the value of its "# KEY: VALUE" line (boot: first when it has none).
header() {
    local value
    value=$(sed -n "s/^# $2: *//p" "$1" | head -n 1)
    [ -z "$value" ] && [ "$2" = boot ] && value=first
    printf '%s\n' "$value"
}
# proves FILE: its comment (what it proves), on one line.
proves() { sed -n '2,/^# boot:/{/^# boot:/d;s/^# //;p}' "$1" | tr '\n' ' ' | sed 's/ $//'; }
scenario_file() {
    local file
    for file in $(scenario_files); do
        [ "$(scenario_name "$file")" = "$1" ] && { echo "$file"; return 0; }
    done
    return 1
}

list() {
    local file
    for file in $(scenario_files); do
        printf '%s\t%s\t%s\t%s\n' "$(scenario_name "$file")" "$(header "$file" boot)" "$(header "$file" needs)" "$(proves "$file")"
    done
}

# select NAME,...: "BOOT NAME" for each named scenario, in run order.
select_names() {
    local name file unknown=""
    for name in ${1//,/ }; do
        scenario_file "$name" >/dev/null || unknown="$unknown $name"
    done
    if [ -n "$unknown" ] || [ -z "${1//,/}" ]; then
        echo "E2E_ONLY: no scenario named:${unknown:- (none given)}. The scenarios (scripts/e2e/scenarios):" >&2
        list | awk -F '\t' '{ printf "  %-22s boot: %-7s needs: %s\n", $1, $2, ($3 == "" ? "-" : $3) }' >&2
        return 2
    fi
    for file in $(scenario_files); do
        name=$(scenario_name "$file")
        [[ ",$1," == *",$name,"* ]] && printf '%s %s\n' "$(header "$file" boot)" "$name"
    done
    return 0
}

# needs NAME: the states scenario NAME declares, each established (need) in the order given.
needs() {
    local file state
    file=$(scenario_file "$1") || { echo "no scenario $1" >&2; return 2; }
    for state in $(header "$file" needs); do
        need "$state" || { fail "$1: needs $state" "it could not be established"; return 1; }
    done
}

# run_scenario NAME: its needs, then the scenario, in a subshell.
run_scenario() {
    local file
    file=$(scenario_file "$1") || { fail "scenario $1" "no such scenario in $SCENARIOS"; return 1; }
    note "---- scenario $1 ($(header "$file" boot) boot; needs: $(header "$file" needs)): $(proves "$file")"
    (
        needs "$1" || exit 1
        # shellcheck source=/dev/null
        . "$file"
        scenario
    )
}

# run_boot BOOT [NAME,...]: that boot's scenarios (all, or those named), in order.
run_boot() {
    local file name
    for file in $(scenario_files); do
        name=$(scenario_name "$file")
        [ "$(header "$file" boot)" = "$1" ] || continue
        [ -z "${2:-}" ] || [[ ",$2," == *",$name,"* ]] || continue
        run_scenario "$name"
    done
}

case ${1:-} in
first-boot) run_boot first "${2:-}" ;;
second-boot) run_boot second "${2:-}" ;;
needs) needs "$2" ;;
list) list ;;
select) select_names "${2:-}" ;;
*) echo "usage: scenario.sh first-boot|second-boot [NAME,...] | needs NAME | list | select NAME,..." >&2; exit 2 ;;
esac
