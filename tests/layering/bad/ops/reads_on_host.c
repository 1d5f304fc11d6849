/* A file that breaks the layering rule on purpose: the check must reject it
 * (test_layering_rejects, tests/CMakeLists.txt). */
#include "cpu/index.h"

int64_t count(const uint8_t *m, int64_t n) { return ct_cpu_count_true(m, n); }
