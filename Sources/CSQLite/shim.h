// SQLite for Sources/SecretStore/SQLite.swift (the only Swift file that includes it).
#include <sqlite3.h>

/// SQLITE_TRANSIENT is a cast macro Swift cannot import: bound values are copied.
static inline sqlite3_destructor_type keychain_sqlite_transient(void) { return SQLITE_TRANSIENT; }
