#ifndef ISLET_CPOSTGRES_SHIM_H
#define ISLET_CPOSTGRES_SHIM_H

#include <libpq-fe.h>

/* The fields of an error result are named by PG_DIAG_* macros, character literals
   that Swift does not import: one typed wrapper per field Islet reads. */

/* The five-character SQLSTATE of a failed result, or NULL. */
static inline const char *islet_pq_result_sqlstate(const PGresult *result) {
    return PQresultErrorField(result, PG_DIAG_SQLSTATE);
}

/* The primary (one-line) message of a failed result, without its detail, hint or
   the statement's text, or NULL. */
static inline const char *islet_pq_result_primary_message(const PGresult *result) {
    return PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY);
}

#endif
