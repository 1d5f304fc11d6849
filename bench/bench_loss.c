/* Loss timings, float32, mean reduction: cross_entropy of logits [512, 1000] with int64
 * targets, and the elementwise losses (mse, smooth_l1 "sl1", huber, binary_cross_entropy
 * with probabilities and with logits) of an input [512, 1000] requiring grad.  Prints
 * "<case>_forward_ms F" and "<case>_fwd_bwd_ms B" (best of several runs);
 * bench_loss.py runs it next to PyTorch with the same thread count and prints the
 * ratios.  Usage: bench_loss [threads] */
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"
#include "ctorch.h"

enum { CE, MSE, SMOOTH_L1, HUBER, BCE, BCEL, NCASES };
static const char *names[NCASES] = {"ce", "mse", "sl1", "huber", "bce", "bcel"};

static ct_tensor *loss(int k, ct_tensor *x, ct_tensor *t) {
    switch (k) {
    case CE: return ct_cross_entropy(x, t);
    case MSE: return ct_mse_loss(x, t);
    case SMOOTH_L1: return ct_smooth_l1_loss(x, t);
    case HUBER: return ct_huber_loss(x, t);
    case BCE: return ct_binary_cross_entropy(x, t);
    default: return ct_binary_cross_entropy_with_logits(x, t);
    }
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : ct_get_num_threads();
    ct_set_num_threads(threads);
    ct_manual_seed(0);
    printf("threads %d\n", threads);
    for (int k = 0; k < NCASES; k++) {
        ct_tensor *x, *t;
        if (k == CE) {
            x = ct_randn(CT_SHAPE(512, 1000), .requires_grad = true);
            t = ct_randint(0, 1000, CT_SHAPE(512));
        } else if (k == BCE) {
            x = ct_rand(CT_SHAPE(512, 1000), .requires_grad = true);
            t = ct_rand(CT_SHAPE(512, 1000));
        } else {
            x = ct_randn(CT_SHAPE(512, 1000), .requires_grad = true);
            t = k == BCEL ? ct_rand(CT_SHAPE(512, 1000)) : ct_randn(CT_SHAPE(512, 1000));
        }
        double best_f = 1e9, best_fb = 1e9;
        for (int r = 0; r < 50; r++) {
            CT_SCOPE {
                double t0 = bench_now();
                CT_NO_GRAD { loss(k, x, t); }
                double t1 = bench_now();
                ct_backward(loss(k, x, t));
                double t2 = bench_now();
                ct_set_grad(x, NULL);
                if (t1 - t0 < best_f) best_f = t1 - t0;
                if (t2 - t1 < best_fb) best_fb = t2 - t1;
            }
        }
        printf("%s_forward_ms %.3f\n%s_fwd_bwd_ms %.3f\n", names[k], best_f * 1e3, names[k],
               best_fb * 1e3);
        ct_release(x);
        ct_release(t);
    }
    return 0;
}
