// SQLite for Sources/SecretStore/SQLite.swift (the only Swift file that includes it).
#include <sqlite3.h>

/// SQLITE_TRANSIENT is a cast macro Swift cannot import: bound values are copied.
static inline sqlite3_destructor_type keychain_sqlite_transient(void) { return SQLITE_TRANSIENT; }

/// sqlite3_db_config is variadic: turns off the checkpoint SQLite makes when the last
/// connection to a WAL database closes, so a file refused at start is left as it was.
static inline int keychain_sqlite_no_checkpoint_on_close(sqlite3 *db) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)0);
}

/// The errno of the last failed system call on the main database's write-ahead log (or
/// rollback journal), else on the database file, else 0. SQLite reports a refused write as
/// SQLITE_IOERR_WRITE and records errno only in the file's object (sqlite3_system_errno stays 0
/// when a COMMIT fails), so a read-only file system is told from a failing disk this way.
static inline int keychain_sqlite_file_errno(sqlite3 *db) {
    int value = 0;
    sqlite3_file *journal = 0;
    if (sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &journal) == SQLITE_OK && journal && journal->pMethods
        && journal->pMethods->xFileControl(journal, SQLITE_FCNTL_LAST_ERRNO, &value) == SQLITE_OK && value != 0) {
        return value;
    }
    value = 0;
    if (sqlite3_file_control(db, "main", SQLITE_FCNTL_LAST_ERRNO, &value) != SQLITE_OK) return 0;
    return value;
}
