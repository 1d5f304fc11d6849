/* Writing modules in C: a residual block (x + F(x)) and a hand-written LSTM cell whose
 * gates each come from two Linear layers (W_i x + U_i h, ...), checked against the
 * built-in LSTMCell with the same weights, then trained a little. */
#include <math.h>
#include <stdio.h>

#include "ctorch.h"

/* ---- a residual block: relu(x + linear2(relu(linear1(x)))) ---- */

typedef struct {
    ct_module *linear1, *linear2;
} residual;

static ct_tensor *residual_forward(ct_module *m, ct_tensor *x) {
    residual *s = ct_module_state(m);
    ct_tensor *h = ct_forward(s->linear2, ct_relu(ct_forward(s->linear1, x)));
    return ct_relu(ct_add(x, h));
}
static const ct_module_class RESIDUAL = {.name = "Residual", .forward = residual_forward};

static ct_module *residual_new(int64_t features) {
    ct_module *m = ct_module_new(&RESIDUAL, sizeof(residual));
    residual *s = ct_module_state(m);
    s->linear1 = ct_module_add(m, "linear1", ct_nn_linear(features, features));
    s->linear2 = ct_module_add(m, "linear2", ct_nn_linear(features, features));
    return m;
}

/* ---- an LSTM cell from eight Linear layers ---- */

typedef struct {
    ct_module *w[4], *u[4]; /* input and hidden transforms of gates i, f, g, o */
} my_lstm_cell;

static const char *const W_NAMES[4] = {"w_i", "w_f", "w_g", "w_o"};
static const char *const U_NAMES[4] = {"u_i", "u_f", "u_g", "u_o"};

/* Inputs (x, h, c); outputs (h', c'). */
static int my_lstm_forward(ct_module *m, int n_in, ct_tensor *const *in, ct_tensor **out,
                           int max_out) {
    my_lstm_cell *s = ct_module_state(m);
    if (n_in != 3 || max_out < 2) return -1;
    ct_tensor *gate[4];
    for (int k = 0; k < 4; k++)
        gate[k] = ct_add(ct_forward(s->w[k], in[0]), ct_forward(s->u[k], in[1]));
    ct_tensor *c =
        ct_add(ct_mul(ct_sigmoid(gate[1]), in[2]), ct_mul(ct_sigmoid(gate[0]), ct_tanh(gate[2])));
    out[0] = ct_mul(ct_sigmoid(gate[3]), ct_tanh(c));
    out[1] = c;
    return 2;
}
static const ct_module_class MY_LSTM = {.name = "MyLSTMCell", .forward_multi = my_lstm_forward};

static ct_module *my_lstm_new(int64_t input, int64_t hidden) {
    ct_module *m = ct_module_new(&MY_LSTM, sizeof(my_lstm_cell));
    my_lstm_cell *s = ct_module_state(m);
    for (int k = 0; k < 4; k++) {
        s->w[k] = ct_module_add(m, W_NAMES[k], ct_nn_linear(input, hidden));
        s->u[k] = ct_module_add(m, U_NAMES[k], ct_nn_linear(hidden, hidden, .bias = false));
    }
    return m;
}

int main(void) {
    ct_set_error_handler(ct_abort_on_error);
    ct_manual_seed(0);
    int rc = 1;
    CT_SCOPE {
        ct_module *net =
            ct_sequential(CT_MODULES(residual_new(8), residual_new(8), ct_nn_linear(8, 1)));
        ct_module_print(net);

        /* The hand-written cell computes what nn.LSTMCell computes with the same weights. */
        ct_module *mine = my_lstm_new(5, 6), *builtin = ct_lstm_cell(5, 6);
        ct_tensor *w_ih = ct_module_get_parameter(builtin, "weight_ih");
        ct_tensor *w_hh = ct_module_get_parameter(builtin, "weight_hh");
        ct_tensor *b = ct_add(ct_module_get_parameter(builtin, "bias_ih"),
                              ct_module_get_parameter(builtin, "bias_hh"));
        CT_NO_GRAD {
            for (int k = 0; k < 4; k++) {
                ct_copy_(ct_module_get_parameter(((my_lstm_cell *)ct_module_state(mine))->w[k],
                                                 "weight"),
                         ct_narrow(w_ih, 0, 6 * k, 6));
                ct_copy_(
                    ct_module_get_parameter(((my_lstm_cell *)ct_module_state(mine))->w[k], "bias"),
                    ct_narrow(b, 0, 6 * k, 6));
                ct_copy_(ct_module_get_parameter(((my_lstm_cell *)ct_module_state(mine))->u[k],
                                                 "weight"),
                         ct_narrow(w_hh, 0, 6 * k, 6));
            }
        }
        ct_tensor *in[3] = {ct_randn(CT_SHAPE(3, 5)), ct_randn(CT_SHAPE(3, 6)),
                            ct_randn(CT_SHAPE(3, 6))};
        ct_tensor *a[2], *r[2];
        ct_forward_multi(mine, 3, in, a, 2);
        ct_forward_multi(builtin, 3, in, r, 2);
        double diff = ct_item(ct_amax(ct_abs(ct_sub(a[0], r[0]))));
        printf("hand-written LSTM cell vs LSTMCell: max difference %.3g\n", diff);

        /* Train the residual net a little on y = sum(sin(x)). */
        ct_tensor *p[16];
        int n = ct_parameters(net, p, 16);
        ct_optim *opt = ct_adam(p, n, .lr = 1e-2);
        double first = 0, last = 0;
        for (int step = 0; step < 200; step++) {
            CT_SCOPE_HERE;
            ct_tensor *x = ct_randn(CT_SHAPE(64, 8));
            ct_tensor *y = ct_sum(ct_sin(x), .dims = CT_DIMS(1), .keepdim = true);
            ct_tensor *loss = ct_mse_loss(ct_forward(net, x), y);
            ct_zero_grad(opt);
            ct_backward(loss);
            ct_step(opt);
            last = ct_item(loss);
            if (step == 0) first = last;
        }
        printf("residual net: loss %.4f -> %.4f\n", first, last);
        rc = diff < 1e-5 && last < first / 4 ? 0 : 1;
    }
    return rc;
}
