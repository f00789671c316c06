#include "CBenchRaw.h"
#include "bench.pb-c.h"

size_t cbench_roundtrip(const uint8_t *data, size_t length, uint8_t *out, size_t capacity) {
    Courier__Bench__Catalog *catalog = courier__bench__catalog__unpack(NULL, length, data);
    if (catalog == NULL) return 0;
    size_t size = courier__bench__catalog__get_packed_size(catalog);
    size_t written = size <= capacity ? courier__bench__catalog__pack(catalog, out) : 0;
    courier__bench__catalog__free_unpacked(catalog, NULL);
    return written;
}
