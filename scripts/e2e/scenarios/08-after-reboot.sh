# shellcheck shell=bash
# The first login after a reboot unlocks the keyring and finds the items; secretd runs under its
# unit, memory locked, and each sandboxing directive of the unit is in force (probe.py).
# boot: second
# needs: users setup-system alice=1

# For one login, secretd.service runs probe.py after it started (see session.sh, sandbox).
# In /run: gone at the next boot.
probe_on() {
    mkdir -p /run/systemd/user/secretd.service.d &&
        printf '[Service]\nExecStartPost=-/usr/bin/python3 %s/probe.py %%t/e2e-probe.txt\n' \
            "$E2E_DIR" >/run/systemd/user/secretd.service.d/e2e-probe.conf
}
probe_off() { rm -rf /run/systemd/user/secretd.service.d; }

scenario() {
    probe_on
    session "after reboot" password alice "$PASSWORD_1" after_reboot
    logout_check "after reboot"
    probe_off
}
