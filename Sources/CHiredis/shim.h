#ifndef COURIER_CHIREDIS_SHIM_H
#define COURIER_CHIREDIS_SHIM_H
#include <hiredis/hiredis.h>
#endif
