# shellcheck shell=bash
# Scoped runs (issue 49): in alice's password login, secretctl run --allow svc-run:a hands
# secret-tool that one item and not its neighbour, even from a new session, and secretctl audit
# shows the read under run:e2e-run; bwrap (unprivileged, a user and PID namespace) works in a
# real login.
# boot: first
# needs: users setup-system alice=1

scoped_run_in_login() {
    local password
    password=$(alice_password)
    ssh_password alice "${!password}" "$(printf '%q ' bash -c '
        printf a-secret | secret-tool store --label "run a" service svc-run account a || { echo "store a failed"; exit 1; }
        printf b-secret | secret-tool store --label "run b" service svc-run account b || { echo "store b failed"; exit 1; }
        got=$(secretctl run --name e2e-run --allow svc-run:a -- secret-tool lookup service svc-run account a)
        [ "$got" = a-secret ] || { echo "the run did not get its allowed item: [$got]"; exit 1; }
        other=$(secretctl run --name e2e-run --allow svc-run:a -- setsid -w secret-tool lookup service svc-run account b)
        [ -z "$other" ] || { echo "the run read an item it was not allowed: [$other]"; exit 1; }
        [ "$(secret-tool lookup service svc-run account b)" = b-secret ] || { echo "outside the run the item is gone"; exit 1; }
        secretctl audit --json --identity run:e2e-run >/tmp/run-trail.$$ || exit 1
        python3 - /tmp/run-trail.$$ <<"PY"
import json, sys
entries = json.loads(open(sys.argv[1]).read())["entries"]
reads = [e for e in entries if e["event"] == "read"]
if not reads or any(e.get("account") != "a" for e in reads) or reads[-1].get("service") != "svc-run":
    print(json.dumps(entries, indent=1))
    print("no read of svc-run/a by run:e2e-run, or a read of another item")
    sys.exit(1)
PY
        rc=$?; rm -f /tmp/run-trail.$$; exit $rc')" 2>&1
}

scenario() {
    check "scoped run: in an ssh login, secretctl run --allow gives secret-tool its item and not its neighbour (also after setsid), and the read is in secretctl audit as run:NAME" \
        scoped_run_in_login
    logout_check "scoped run"
}
