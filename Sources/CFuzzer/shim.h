// libFuzzer's entry point for programs that keep their own main (see `make fuzz`): it parses
// libFuzzer's options from argc/argv and runs `callback` on each input. Only the fuzz build
// links libFuzzer (libclang_rt.fuzzer_no_main); normal builds never call it.
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
