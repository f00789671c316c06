// The hooks are static inline functions in include/CSanitizerHooks.h; SwiftPM needs one source
// file per C target.
#include "CSanitizerHooks.h"
