/* An MLP classifier on two interleaved spirals (a dataset that needs the hidden
 * layers), trained with a DataLoader over a TensorDataset, CrossEntropyLoss and SGD
 * with momentum; evaluated in eval mode under no_grad.  Exits non-zero below 95%. */
#include <math.h>
#include <stdio.h>

#include "ctorch.h"

#define N 1000

int main(void) {
    ct_set_error_handler(ct_abort_on_error);
    ct_manual_seed(0);
    double accuracy = 0;
    CT_SCOPE { /* everything created in here is freed at its end */
        /* Two spirals, 500 points each, with a little noise. */
        float xy[N * 2];
        int64_t label[N];
        ct_tensor *noise = ct_mul_scalar(ct_randn(CT_SHAPE(N, 2)), 0.05);
        const float *e = ct_data_ptr(noise);
        for (int i = 0; i < N; i++) {
            int c = i % 2;
            double r = (double)(i / 2) / (N / 2), a = 3 * M_PI * r + c * M_PI;
            xy[2 * i] = (float)(r * cos(a) + e[2 * i]);
            xy[2 * i + 1] = (float)(r * sin(a) + e[2 * i + 1]);
            label[i] = c;
        }
        ct_tensor *data[2] = {ct_tensor_f32(xy, CT_SHAPE(N, 2)), ct_tensor_i64(label, CT_SHAPE(N))};
        ct_dataset *ds = ct_tensor_dataset(2, data);
        ct_loader *loader = ct_dataloader(ds, .batch_size = 32, .shuffle = true);
        ct_module *model =
            ct_sequential(CT_MODULES(ct_nn_linear(2, 64), ct_nn_relu(), ct_nn_linear(64, 64),
                                     ct_nn_relu(), ct_nn_linear(64, 2)));
        ct_tensor *params[8];
        int n = ct_parameters(model, params, 8);
        ct_optim *opt = ct_sgd(params, n, .lr = CT_SOME(0.1), .momentum = 0.9);
        for (int epoch = 1; epoch <= 60; epoch++) {
            double total = 0;
            int batches = 0;
            ct_batch b;
            while (true) {
                CT_SCOPE_HERE;
                if (!ct_loader_next(loader, &b)) break;
                ct_tensor *loss = ct_cross_entropy(ct_forward(model, b.t[0]), b.t[1]);
                ct_zero_grad(opt);
                ct_backward(loss);
                ct_step(opt);
                total += ct_item(loss);
                batches++;
            }
            if (epoch % 20 == 0) printf("epoch %d  loss %.4f\n", epoch, total / batches);
        }
        ct_module_eval(model);
        CT_SCOPE {
            CT_NO_GRAD {
                ct_tensor *pred = ct_argmax(ct_forward(model, data[0]), .dims = CT_DIMS(1));
                accuracy = ct_item(ct_mean(ct_to(ct_eq(pred, data[1]), .dtype = CT_F32)));
            }
        }
        printf("accuracy %.1f%%\n", 100 * accuracy);
    }
    return accuracy >= 0.95 ? 0 : 1;
}
