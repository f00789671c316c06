#ifndef CBENCH_PROTOS_H
#define CBENCH_PROTOS_H
// protoc-c output for Protos/bench.proto stays private to this target: Courier's CProtobufC
// module owns <protobuf-c/protobuf-c.h> for Swift, so descriptors cross as untyped pointers
// (cast them to UnsafePointer<ProtobufCMessageDescriptor>).
#include <stddef.h>
#include <stdint.h>

// The descriptors' addresses (Swift should not take &descriptor itself).
const void *cbench_catalog_descriptor(void);
const void *cbench_item_descriptor(void);

// Raw protobuf-c, the baseline: unpack `data` into a C message and pack it again into `out`.
// Returns the packed size, or 0 when `data` does not parse or `out` is too small.
size_t cbench_roundtrip(const uint8_t *data, size_t length, uint8_t *out, size_t capacity);

#endif
