// SQLite for Sources/SecretStore/SQLite.swift (the only Swift file that includes it).
#include <sqlite3.h>

/// SQLITE_TRANSIENT is a cast macro Swift cannot import: bound values are copied.
static inline sqlite3_destructor_type keychain_sqlite_transient(void) { return SQLITE_TRANSIENT; }

/// sqlite3_db_config is variadic: turns off the checkpoint SQLite makes when the last
/// connection to a WAL database closes, so a file refused at start is left as it was.
static inline int keychain_sqlite_no_checkpoint_on_close(sqlite3 *db) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)0);
}
