/* Built OUTSIDE the source tree against an installed ctorch (see run.sh). */
#include <ctorch.h>
#include <stdio.h>

int main(void) {
    ct_set_error_handler(ct_abort_on_error);
    CT_SCOPE {
        float v[] = {1, 2, 3};
        ct_tensor *x = ct_tensor_f32(v, CT_SHAPE(3), .requires_grad = true);
        ct_tensor *y = ct_sum(ct_mul(x, x));
        ct_backward(y);
        float g[3];
        ct_copy_to_buffer(ct_grad(x), g, CT_F32, sizeof g);
        printf("sum=%g grad=%g %g %g\n", ct_item(y), g[0], g[1], g[2]);
    }
    return 0;
}
