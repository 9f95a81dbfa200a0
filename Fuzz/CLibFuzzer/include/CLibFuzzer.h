#ifndef ISLET_CLIBFUZZER_H
#define ISLET_CLIBFUZZER_H

#include <stddef.h>
#include <stdint.h>

/// libFuzzer's driver (in the runtime that -sanitize=fuzzer links): runs the fuzzer
/// with the command line `argc`/`argv` on `callback`. A fuzz executable's own entry
/// point calls it, since SwiftPM names an executable's entry point after its module.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
