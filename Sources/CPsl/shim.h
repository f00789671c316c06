#ifndef COURIER_CPSL_SHIM_H
#define COURIER_CPSL_SHIM_H
#include <libpsl.h>
#endif
