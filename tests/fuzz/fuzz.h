/* Fuzz harnesses: one per loader of untrusted input, each a libFuzzer entry point.
 * `make fuzz` builds them with clang -fsanitize=fuzzer,address,undefined and runs
 * each for a bounded time; the ctest fuzz_*_replay runs every committed seed and
 * reproducer (corpus/<name>/, reproducers/<name>/) through a plain main()
 * (replay_main.c), so a regression fails `make test`. */
#ifndef CT_FUZZ_H
#define CT_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Once before the inputs (libFuzzer calls it too): errors are the expected outcome,
 * so none is printed. */
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Writes data to a file of this process named <name> in a private temporary
 * directory and returns its path (valid until the next call with the same name). */
const char *fuzz_file(const char *name, const uint8_t *data, size_t size);

/* Runs every sample of a dataset (at most the first 64), dropping what it returns. */
void fuzz_walk_dataset(ct_dataset *ds);

#endif
