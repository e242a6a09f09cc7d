# shellcheck shell=bash
# The administrator creates alice and bob with passwords (useradd, chpasswd) and authorizes root's
# ssh key for alice. Leaves the state users (create_users is in state.sh).
# boot: first
# needs: 

scenario() {
    check "users alice and bob created with passwords (useradd, chpasswd), root's ssh key for alice" create_users
}
