/* Bitwise tensor comparison for tests and their fixture programs (no test runner). */
#include <string.h>

#include "ct_test.h"

bool ct_test_same_bits(ct_tensor *a, ct_tensor *b) {
    if (!a || !b || ct_dtype_of(a) != ct_dtype_of(b) || ct_ndim(a) != ct_ndim(b)) return false;
    for (int d = 0; d < ct_ndim(a); d++)
        if (ct_size(a, d) != ct_size(b, d)) return false;
    ct_tensor *x = ct_contiguous(a), *y = ct_contiguous(b);
    bool same = x && y &&
                !memcmp(ct_data_ptr(x), ct_data_ptr(y), (size_t)ct_numel(x) * ct_dtype_size(ct_dtype_of(x)));
    return same;
}
