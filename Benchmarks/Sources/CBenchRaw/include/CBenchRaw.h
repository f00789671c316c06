#ifndef CBENCH_RAW_H
#define CBENCH_RAW_H
// Raw protobuf-c, the baseline of the protobuf benchmarks.
#include <stddef.h>
#include <stdint.h>

// Unpacks `data` into a C Catalog (protobuf-c's default allocator) and packs it again into
// `out`. Returns the packed size, or 0 when `data` does not parse or `out` is too small.
size_t cbench_roundtrip(const uint8_t *data, size_t length, uint8_t *out, size_t capacity);

#endif
