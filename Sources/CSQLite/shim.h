#ifndef ISLET_CSQLITE_SHIM_H
#define ISLET_CSQLITE_SHIM_H

#include <sqlite3.h>

/// Binds text that SQLite copies at once: `SQLITE_TRANSIENT` is a macro casting -1 to
/// a function pointer, which Swift cannot import.
static inline int islet_sqlite3_bind_text_transient(sqlite3_stmt *stmt, int index, const char *text, int length) {
    return sqlite3_bind_text(stmt, index, text, length, SQLITE_TRANSIENT);
}

/// Binds a blob that SQLite copies at once (see `islet_sqlite3_bind_text_transient`).
static inline int islet_sqlite3_bind_blob_transient(sqlite3_stmt *stmt, int index, const void *bytes, int length) {
    return sqlite3_bind_blob(stmt, index, bytes, length, SQLITE_TRANSIENT);
}

#endif
