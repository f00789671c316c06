#include <protobuf-c/protobuf-c.h>

/// protobuf-c's shared empty string (unset proto3 strings point at it).
static inline const char *courier_protobuf_c_empty_string(void) { return protobuf_c_empty_string; }
