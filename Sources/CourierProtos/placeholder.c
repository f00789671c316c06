// Replaced by the protoc-c output of scripts/generate-protos.sh.
#include "CourierProtos.h"
