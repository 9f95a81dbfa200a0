#ifndef ISLET_CPOSTGRES_SHIM_H
#define ISLET_CPOSTGRES_SHIM_H

/* libpq's calls that Islet makes are neither variadic nor macros, so this module
   needs no wrappers; it exists to give libpq one pkg-config-driven home. */
#include <libpq-fe.h>

#endif
