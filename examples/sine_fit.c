/* sine_fit: a 2-layer network (1 -> 32 tanh -> 1) fitted to sin(x) on [-pi, pi] with
 * hand-written SGD on ctorch ops.  Prints the loss as it falls; exits non-zero when
 * it did not fall at least 10x, or when a training step did not give back all the
 * memory it used.
 *
 * The PyTorch it follows:
 *     h = torch.tanh(x @ w1 + b1);  y = h @ w2 + b2
 *     loss = ((y - torch.sin(x)) ** 2).mean();  loss.backward()
 *     with torch.no_grad(): for p in params: p -= lr * p.grad; p.grad = None
 */
#include <ctorch.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

enum { N = 256, H = 32, STEPS = 3000, PRINT_EVERY = 300 };
static const double LR = 0.05;

/* Uniform in [-bound, bound) from a fixed-seed LCG, so every run is the same.
 * (ct_rand/ct_randn with ct_manual_seed replace this once they land.) */
static ct_tensor *uniform(ct_shape shape, double bound, uint64_t *state) {
    float v[H]; /* the largest parameter has H elements */
    int64_t n = 1;
    for (int i = 0; i < shape.ndim; i++) n *= shape.d[i];
    if (n > H) return NULL;
    for (int64_t i = 0; i < n; i++) {
        *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
        v[i] = (float)(((double)(*state >> 11) / 9007199254740992.0 * 2 - 1) * bound);
    }
    return ct_tensor_f32(v, shape, .requires_grad = true);
}

/* tanh(z) = 1 - 2 / (exp(2z) + 1).  exp(2z) overflows for z > 44 (then the gradient
 * is NaN); here |z| stays far below that.  ct_tanh(z) replaces this once it lands. */
static ct_tensor *tanh_from_exp(ct_tensor *z) {
    return ct_rsub_scalar(ct_div(ct_full(CT_SHAPE(), 2.0),
                                 ct_add_scalar(ct_exp(ct_mul_scalar(z, 2)), 1)), 1);
}

int main(void) {
    ct_set_error_handler(ct_abort_on_error);
    float xs[N], ys[N];
    for (int i = 0; i < N; i++) {
        xs[i] = (float)(-M_PI + 2 * M_PI * i / (N - 1));
        ys[i] = sinf(xs[i]);
    }
    uint64_t seed = 42;
    ct_tensor *x = ct_tensor_f32(xs, CT_SHAPE(N, 1));
    ct_tensor *target = ct_tensor_f32(ys, CT_SHAPE(N, 1));
    ct_tensor *w1 = uniform(CT_SHAPE(1, H), 1.0, &seed); /* nn.Linear(1, 32) init bound */
    ct_tensor *b1 = uniform(CT_SHAPE(H), 1.0, &seed);
    ct_tensor *w2 = uniform(CT_SHAPE(1, H), 1.0 / sqrt(H), &seed); /* Linear(32, 1) */
    ct_tensor *b2 = uniform(CT_SHAPE(1), 1.0 / sqrt(H), &seed);
    ct_tensor *params[] = {w1, b1, w2, b2};

    double first = 0, last = 0;
    int64_t mem_between_steps = 0;
    for (int step = 1; step <= STEPS; step++) {
        /* Between steps only the parameters and the data are alive. */
        if (step == 2) mem_between_steps = ct_memory_allocated(CT_CPU);
        CT_SCOPE_HERE; /* every temporary of this step is freed at the end of the body */
        /* x[N,1] * w1[1,H] broadcasts to x @ w1; ct_matmul(x, w1) replaces it. */
        ct_tensor *h = tanh_from_exp(ct_add(ct_mul(x, w1), b1));              /* [N, H] */
        /* sum over H of h * w2 is h @ w2.T; ct_matmul(h, ct_t(w2)) replaces it. */
        ct_tensor *y = ct_add(ct_sum(ct_mul(h, w2), .dims = CT_DIMS(1), .keepdim = true),
                              b2);                                              /* [N, 1] */
        ct_tensor *d = ct_sub(y, target);
        ct_tensor *loss = ct_mul_scalar(ct_sum(ct_mul(d, d)), 1.0 / N); /* ct_mean later */
        ct_backward(loss);
        CT_NO_GRAD {
            for (int p = 0; p < 4; p++) {
                ct_add_alpha_(params[p], ct_grad(params[p]), -LR);
                ct_set_grad(params[p], NULL);
            }
        }
        last = ct_item(loss);
        if (step == 1) first = last;
        if (step == 1 || step % PRINT_EVERY == 0)
            printf("step %4d  loss %.6f\n", step, last);
    }
    int64_t mem_end = ct_memory_allocated(CT_CPU);
    for (int p = 0; p < 4; p++) ct_release(params[p]);
    ct_release(x);
    ct_release(target);

    int ok = last * 10 <= first && mem_end == mem_between_steps;
    printf("loss %.6f -> %.6f (%.0fx lower); tensor memory per step constant: %s\n", first,
           last, first / last, mem_end == mem_between_steps ? "yes" : "no");
    printf("%s\n", ok ? "OK" : "FAILED: the loss did not fall 10x or memory grew");
    return ok ? 0 : 1;
}
