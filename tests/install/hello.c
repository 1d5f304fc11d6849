/* Built OUTSIDE the source tree against an installed ctorch, or by a CMake project
 * using ctorch (see run.sh, consumer.sh). */
#include <ctorch.h>
#include <stdio.h>
#include <string.h>

_Static_assert(CTORCH_VERSION_AT(CTORCH_VERSION_MAJOR, CTORCH_VERSION_MINOR, CTORCH_VERSION_PATCH) &&
                   !CTORCH_VERSION_AT(CTORCH_VERSION_MAJOR, CTORCH_VERSION_MINOR + 1, 0),
               "CTORCH_VERSION_AT compares with the headers' version");

int main(void) {
    if (strcmp(ct_version(), CTORCH_VERSION_STRING) != 0) {
        fprintf(stderr, "the headers are ctorch %s, the library is %s\n", CTORCH_VERSION_STRING,
                ct_version());
        return 1;
    }
    ct_set_error_handler(ct_abort_on_error);
    CT_SCOPE {
        float v[] = {1, 2, 3};
        ct_tensor *x = ct_tensor_f32(v, CT_SHAPE(3), .requires_grad = true);
        ct_tensor *y = ct_sum(ct_mul(x, x));
        ct_backward(y);
        float g[3];
        ct_copy_to_buffer(ct_grad(x), g, CT_F32, sizeof g);
        printf("ctorch %s sum=%g grad=%g %g %g\n", ct_version(), ct_item(y), g[0], g[1], g[2]);
    }
    return 0;
}
