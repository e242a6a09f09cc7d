# shellcheck shell=bash
# A package downgrade, then the upgrade again: alice's database marked as written by a newer
# schema (PRAGMA user_version one above the version this secretd writes) is refused at once,
# with the version it needs, in the journal and to clients as io.github.secretd.Error.UnusableDatabase
# (secret-tool and secretctl fail at once saying why); the file is left byte for byte as it was and
# no empty keyring is made. With the version put back (the newer package installed again), it
# opens with her password and her items are there. Only this version's packages exist here: the
# newer schema is this version's file with a higher version number, not a real newer secretd's.
# boot: second
# needs: users setup-system alice

NEWER_DB=/home/alice/.local/share/secretd/secretd.sqlite3

# schema_version [N]: prints the schema version of alice's database (PRAGMA user_version), after
# setting it to N if given; as alice, with her secretd stopped.
# shellcheck disable=SC2120 # given N through expect_output
schema_version() {
    runuser -u alice -- python3 - "$NEWER_DB" "$@" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
if len(sys.argv) > 2:
    db.execute("PRAGMA user_version = %d" % int(sys.argv[2]))
print(db.execute("PRAGMA user_version").fetchone()[0])
db.close()
PY
}

# keyring_files: the sha256 of the database file and the names of every file in the directory,
# with the size of the write-ahead log if there is one (a refused file gets no write in it).
keyring_files() {
    sha256sum "$NEWER_DB" &&
        (cd "$(dirname "$NEWER_DB")" && find . -type f ! -name '*-shm' ! -name '*-wal' | sort) &&
        { [ ! -e "$NEWER_DB-wal" ] || echo "wal: $(stat -c %s "$NEWER_DB-wal") bytes"; }
}

# unchanged BEFORE: keyring_files prints BEFORE, but for an empty write-ahead log.
unchanged() {
    local after
    after=$(keyring_files | grep -v '^wal: 0 bytes$')
    [ "$after" = "$(printf '%s\n' "$1" | grep -v '^wal: 0 bytes$')" ] && return 0
    diff <(printf '%s\n' "$1") <(printf '%s\n' "$after")
    echo "alice's keyring files changed"
    return 1
}

# refusal_logged FOUND SUPPORTED: secretd's journal says why, with both versions, at priority err.
refusal_logged() {
    local want="the keyring database $NEWER_DB was written by a newer secretd (schema version $1; this secretd reads versions up to $2)"
    journalctl --no-pager -o cat -p err _UID="$(id -u alice)" _COMM=secretd | grep -qF "$want" && return 0
    journalctl --no-pager -o cat _UID="$(id -u alice)" _COMM=secretd | tail -n 5
    echo "secretd's journal has no error line '$want'"
    return 1
}

scenario() {
    local password supported newer before
    password=$(alice_password)
    check "newer database: alice logged out (her secretd stopped)" logged_out alice
    # shellcheck disable=SC2119
    supported=$(schema_version) || { fail "newer database: read the schema version" "$supported"; return; }
    newer=$((supported + 1))
    check "newer database: the file marked as written by schema version $newer (this secretd writes $supported)" \
        expect_output "$newer" schema_version "$newer"
    before=$(keyring_files)
    session "newer database" key alice newer_database_refused "$NEWER_DB" "$newer" "$supported"
    logout_check "newer database"
    check "newer database: secretd's journal names the version the file needs and the one it reads" refusal_logged "$newer" "$supported"
    check "newer database: the file is byte for byte as it was, and no other keyring file was made" unchanged "$before"

    check "newer database put back: schema version $supported again (the newer package installed again)" \
        expect_output "$supported" schema_version "$supported"
    session "newer database put back" password alice "${!password}" password_login "newer database put back"
    logout_check "newer database put back"
}
