# shellcheck shell=bash
# Unattended unlock from a TPM (swtpm): alice enrols in a session, then with no login at all
# (linger) secretd unlocks her keyring from the TPM; after tpm remove it stays locked.
# boot: second
# needs: users setup-system alice=1

# ---- unattended unlock from the TPM: a software TPM (swtpm) as root runs it for the machine,
# its socket in the group tss as /dev/tpmrm0 is; alice enrols in a session, then her user
# manager starts with no login at all (linger, as on a server) and secretd unlocks from the TPM.

TPM_SOCKET=/run/e2e-swtpm/tpm
tpm_start() {
    local tss
    tss=$(getent group tss | cut -d: -f3) || { echo "no group tss"; return 1; }
    mkdir -p /var/lib/e2e-swtpm /run/e2e-swtpm && chmod 755 /run/e2e-swtpm &&
        systemd-run --unit=e2e-swtpm --quiet swtpm socket --tpm2 --tpmstate dir=/var/lib/e2e-swtpm \
            --server "type=unixio,path=$TPM_SOCKET,mode=0660,gid=$tss" \
            --ctrl "type=unixio,path=$TPM_SOCKET.ctrl,mode=0660,gid=$tss" --flags not-need-init,startup-clear &&
        usermod -aG tss alice || return 1
    for _ in $(seq 50); do [ -S "$TPM_SOCKET" ] && return 0; sleep 0.2; done
    echo "swtpm did not make $TPM_SOCKET: $(systemctl status e2e-swtpm --no-pager 2>&1 | tail -n 5)"
    return 1
}
tpm_config() {
    local dir=/home/alice/.config/secretd
    install -d -o alice -g alice -m 700 /home/alice/.config "$dir" &&
        printf 'tpm-tcti = swtpm:path=%s\n' "$TPM_SOCKET" >"$dir/secretd.conf" &&
        chown alice:alice "$dir/secretd.conf" && chmod 600 "$dir/secretd.conf"
}
# Her user manager with no session (linger), restarted: secretd starts with no password.
tpm_unattended() {
    local uid state _
    uid=$(id -u alice)
    loginctl enable-linger alice && systemctl restart "user@$uid.service" || return 1
    for _ in $(seq 50); do
        state=$(as_user alice secretctl status --json 2>/dev/null | state_from_json 2>/dev/null)
        [ "$state" = unlocked ] && break
        sleep 0.3
    done
    [ "$state" = unlocked ] || { echo "the login keyring is ${state:-unreachable} with no login"; return 1; }
    journalctl --no-pager -o cat _UID="$uid" | grep -q 'unlocked the login keyring with the TPM' && return 0
    echo "secretd did not say it unlocked with the TPM"
    return 1
}
tpm_item_reads() { expect_output "$SECRET_TOOL" as_user alice secretctl get svc acc; }
tpm_removed_locks() {
    local uid state
    uid=$(id -u alice)
    as_user alice secretctl tpm remove && systemctl restart "user@$uid.service" || return 1
    state=$(as_user alice secretctl status --json 2>/dev/null | state_from_json 2>/dev/null)
    [ "$state" = locked ] && return 0
    echo "after tpm remove the login keyring is ${state:-unreachable}"
    return 1
}
tpm_stop() {
    loginctl disable-linger alice
    gpasswd -d alice tss >/dev/null
    rm -f /home/alice/.config/secretd/secretd.conf
    systemctl stop e2e-swtpm
}
tpm_unlock() {
    check "tpm: a software TPM (swtpm) serves $TPM_SOCKET to the group tss, alice is in it" tpm_start
    check "tpm: alice's secretd.conf names it (tpm-tcti)" tpm_config
    session "tpm enroll" password alice "$1" tpm_enroll "$1"
    logout_check "tpm enroll"
    check "tpm: with no login (linger) and no password, secretd unlocks the login keyring from the TPM" tpm_unattended
    check "tpm: an item stored before reads back" tpm_item_reads
    check "tpm: after secretctl tpm remove, the next start leaves the keyring locked" tpm_removed_locks
    tpm_stop
    logged_out alice
}

scenario() { tpm_unlock "$PASSWORD_1"; }
