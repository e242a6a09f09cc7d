# shellcheck shell=bash
# su - alice from bob's session, with her password, while alice has no session of her own: su
# works and clients say at once that there is no provider (exit 5).
# boot: second
# needs: users setup-system alice=1

scenario() {
    session "su from bob" password bob "$PASSWORD_BOB" su_from_bob
    logout_check "su from bob" bob
    logout_check "su from bob"
}
