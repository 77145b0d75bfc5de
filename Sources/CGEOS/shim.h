#ifndef CGEOS_SHIM_H
#define CGEOS_SHIM_H
// GEOS's own header advises defining this so that only the re-entrant (_r) API is visible.
#define GEOS_USE_ONLY_R_API
#include <geos_c.h>
#endif
