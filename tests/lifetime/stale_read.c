/* Reads a tensor's data through a pointer taken before the tensor was freed: in the
 * debug lifetime mode under AddressSanitizer this read is reported (ctest expects
 * the report).  STALE_READ_NUMEL elements: a few (the data sits in the storage's
 * block, poisoned while it waits in the quarantine) or many (memory of its own,
 * given back to malloc). */
#include <stdio.h>

#include "ctorch.h"

int main(void) {
    float *data = NULL;
    CT_SCOPE {
        ct_tensor *t = ct_full(CT_SHAPE(STALE_READ_NUMEL), 2.0);
        data = ct_data_ptr(t);
    }
    printf("read %g through a stale pointer, unreported\n", (double)data[0]);
    return 0;
}
