# shellcheck shell=bash
# A console login (login(1) on a terminal) unlocks the keyring: secretctl status in its shell
# shows it unlocked.
# boot: second
# needs: users setup-system alice=1

# alice logs in on a terminal with login(1), as on the console, and looks at her keyring.
console_login() {
    local out rc
    out=$(E2E_ANSWERS=$PASSWORD_1 E2E_TYPE=$'secretctl status\nexit' timeout 60 \
        python3 "$E2E_DIR/pty-drive.py" 50 login alice 2>&1)
    rc=$?
    printf '%s\n' "$out"
    printf '%s\n' "$out" | grep -q '/collection/login[[:space:]]*unlocked' && return 0
    echo "login exited $rc; secretctl status in its shell did not show the login keyring unlocked"
    return 1
}

scenario() {
    check "console login (login(1) on a terminal): secretctl status shows the login keyring unlocked" console_login
    logout_check "console login"
}
