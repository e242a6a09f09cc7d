# shellcheck shell=bash
# A real package downgrade, then the upgrade again. apt installs a newer version (make deb's newer
# secretd: this version's source with one schema migration more), whose secretd moves alice's
# database to its schema at her login. apt then goes back to this version: its secretd refuses
# the newer database at once, with the version it needs, in the journal and to clients as
# io.github.secretd.Error.UnusableDatabase (secret-tool and secretctl fail at once saying why);
# the file is left byte for byte as it was and no empty keyring is made. apt installs the newer
# version again: her database opens with her password and her items are there. The machine is
# left with this version's packages and alice without a keyring (alice=none).
# boot: second
# needs: users setup-system alice

NEWER_DB=/home/alice/.local/share/secretd/secretd.sqlite3

# schema_version: prints the schema version of alice's database (PRAGMA user_version); as alice,
# with her secretd stopped.
schema_version() {
    runuser -u alice -- python3 - "$NEWER_DB" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
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

# back_to_this_version: this version's packages again, and alice's keyring of the newer version
# removed (she is logged out; her password PASSWORD_1, as alice=none has it).
back_to_this_version() { apt_downgrade current && alice_fresh 1; }

scenario() {
    local password supported newer before current
    password=$(alice_password)
    current=$(version_of current)
    check "newer database: alice logged out (her secretd stopped)" logged_out alice
    supported=$(schema_version) || { fail "newer database: read the schema version" "$supported"; return; }
    newer=$((supported + 1))
    check "newer version: apt install of $(version_of newer) (its secretd has one schema migration more)" apt_install newer
    session "newer version" password alice "${!password}" password_login "newer version"
    logout_check "newer version"
    check "newer version: its secretd moved alice's database to schema version $newer (this version's writes $supported)" \
        expect_output "$newer" schema_version
    check "package downgrade: apt install --allow-downgrades of this version, $current" apt_downgrade current
    before=$(keyring_files)
    session "newer database" key alice newer_database_refused "$NEWER_DB" "$newer" "$supported"
    logout_check "newer database"
    check "newer database: secretd's journal names the version the file needs and the one it reads" refusal_logged "$newer" "$supported"
    check "newer database: the file is byte for byte as it was, and no other keyring file was made" unchanged "$before"

    check "upgrade again: apt install of $(version_of newer)" apt_install newer
    session "upgrade again" password alice "${!password}" password_login "upgrade again"
    logout_check "upgrade again"
    check "back to this version ($current); alice's keyring of the newer version removed, her password PASSWORD_1" back_to_this_version
    state_set alice none
}
