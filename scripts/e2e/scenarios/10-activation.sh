# shellcheck shell=bash
# D-Bus activation: with secretd stopped, a client's first call starts secretd.service, with
# nothing enabled per user.
# boot: second
# needs: users setup-system alice

scenario() {
    session "activation" key alice activation
    logout_check "activation"
}
