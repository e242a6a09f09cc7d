# shellcheck shell=bash
# Who read what (issue 49): in alice's password login, secret-tool reads her item, and
# secretctl audit shows that read under exe:/usr/bin/secret-tool with its pid and command line,
# the item named, the login's unlock by pam_secretd before it, and no secret anywhere in it.
# boot: first
# needs: users setup-system alice=1

# In one login: secret-tool reads svc/acc, then the trail's entries since the login began, as
# JSON, are checked with python3.
trail_shows_read() {
    local password
    password=$(alice_password)
    ssh_password alice "${!password}" "$(printf '%q ' bash -c '
        . /usr/local/lib/e2e/lib.sh
        start=$(date -u +%Y-%m-%dT%H:%M:%SZ -d "-30 seconds")
        secret-tool lookup service svc account acc >/dev/null || { echo "secret-tool lookup failed"; exit 1; }
        secretctl audit --json --since "$start" >/tmp/trail.$$ || exit 1
        python3 - "$SECRET_TOOL" /tmp/trail.$$ <<"PY"
import json, sys
secret, path = sys.argv[1], sys.argv[2]
text = open(path).read()
entries = json.loads(text)["entries"]
reads = [e for e in entries if e["event"] == "read" and e["identity"] == "exe:/usr/bin/secret-tool"]
ok = bool(reads) and reads[-1].get("service") == "svc" and reads[-1].get("account") == "acc" \
    and reads[-1].get("command", "").startswith("secret-tool lookup") and reads[-1].get("pid", 0) > 0
unlocks = [e for e in entries if e["event"] == "unlock" and e["identity"] == "pam_secretd"]
if not ok or not unlocks or secret in text:
    print(json.dumps(entries, indent=1))
    print("no read by secret-tool of svc/acc with its pid and command line, no unlock by pam_secretd, or the secret is in the trail")
    sys.exit(1)
PY
        rc=$?; rm -f /tmp/trail.$$; exit $rc')" 2>&1
}

scenario() {
    check "audit trail: secret-tool's read in an ssh login is in secretctl audit (identity, pid, command line, item), after pam_secretd's unlock, with no secret" \
        trail_shows_read
    logout_check "audit trail"
}
