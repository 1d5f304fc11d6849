/* Autograd basics: the graph is recorded as the program runs, and ct_backward fills
 * each leaf's .grad.  Exits non-zero if a value is wrong.
 *
 *     build/examples/autograd_basics
 */
#include <math.h>
#include <stdio.h>

#include "ctorch.h"

static int wrong;

/* Prints t as PyTorch would ("x.grad = tensor([12., 20., 28.])") and compares it
 * with the n expected values.  (A stand-in until ct_print lands.) */
static void show(const char *name, ct_tensor *t, int n, const double *want) {
    double v[16] = {0};
    if (!t || ct_numel(t) != n || n > 16 || ct_copy_to_buffer(t, v, CT_F64, sizeof v) != 0) {
        printf("%s = %s\n", name, t ? "(unexpected shape)" : "None");
        wrong++;
        return;
    }
    printf("%s = tensor([", name);
    for (int i = 0; i < n; i++) printf("%s%g.", i ? ", " : "", v[i]);
    printf("])\n");
    for (int i = 0; i < n; i++)
        if (fabs(v[i] - want[i]) > 1e-5) {
            fprintf(stderr, "%s[%d] = %g, expected %g\n", name, i, v[i], want[i]);
            wrong++;
        }
}

int main(void) {
    ct_set_error_handler(ct_abort_on_error); /* any failing call: message, call site, abort */
    CT_SCOPE {
        /* z = sum((w x + b)^2): dz/dx = 2 (w x + b) w = 28, dz/dw = 2 (w x + b) x = 42. */
        ct_tensor *x = ct_tensor_f32((float[]){3}, CT_SHAPE(1), .requires_grad = true);
        ct_tensor *w = ct_tensor_f32((float[]){2}, CT_SHAPE(1), .requires_grad = true);
        ct_tensor *b = ct_tensor_f32((float[]){1}, CT_SHAPE(1));
        ct_tensor *y = ct_add(ct_mul(w, x), b); /* the graph is built as this runs */
        ct_tensor *z = ct_sum(ct_mul(y, y));
        printf("z = %g, z.grad_fn = %s\n", ct_item(z), ct_node_name(ct_grad_fn(z)));
        ct_backward(z);
        show("x.grad", ct_grad(x), 1, (double[]){28});
        show("w.grad", ct_grad(w), 1, (double[]){42});
        printf("b.grad = %s\n", ct_grad(b) ? "a tensor (wrong)" : "None");
        if (ct_grad(b)) wrong++;
    }
    CT_SCOPE {
        /* y = x^2 + 3x + 1 at x = 2: dy/dx = 2x + 3 = 7. */
        ct_tensor *x = ct_tensor_f64((double[]){2}, CT_SHAPE(1), .requires_grad = true);
        ct_tensor *y = ct_add_scalar(ct_add(ct_mul(x, x), ct_mul_scalar(x, 3)), 1);
        printf("y = %g\n", ct_item(y));
        ct_backward(y);
        show("x.grad", ct_grad(x), 1, (double[]){7});
    }
    CT_SCOPE {
        /* c = ((2x + 1)^2).sum() for x = [1, 2, 3]: dc/dx = 4 (2x + 1) = 8x + 4. */
        float xs[] = {1, 2, 3};
        ct_tensor *x = ct_tensor_f32(xs, CT_SHAPE(3), .requires_grad = true);
        ct_tensor *t = ct_add_scalar(ct_mul_scalar(x, 2), 1);
        ct_tensor *c = ct_sum(ct_mul(t, t));
        printf("c = %g\n", ct_item(c));
        ct_backward(c);
        show("x.grad", ct_grad(x), 3, (double[]){12, 20, 28});
    }
    if (wrong) fprintf(stderr, "autograd_basics: %d wrong values\n", wrong);
    return wrong ? 1 : 0;
}
