// Declarations only (include/CLibFuzzer.h); the driver comes with -sanitize=fuzzer.
#include "CLibFuzzer.h"
