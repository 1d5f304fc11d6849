/* The fused recurrent cell kernels (cpu/rnn_cell.c), registered under
 * CT_OP_thnn_fused_lstm_cell and CT_OP_thnn_fused_gru_cell. */
#ifndef CT_KERNELS_RNN_CELL_H
#define CT_KERNELS_RNN_CELL_H

#include <stdbool.h>
#include <stdint.h>

/* Every tensor contiguous, of the kernel's dtype; G = 4 (LSTM) or 3 (GRU).
 *
 * LSTM forward: ig, hg [B, 4H], bi, bh [4H] or NULL, x = cx [B, H]
 *   -> ws [B, 4H] (the activated gates i, f, g, o), cy, hy [B, H].
 * LSTM backward: ws_in (the forward's ws), x = cx, cy_in (the forward's cy), ghy, gcy
 *   [B, H] -> gig [B, 4H] (the gradient of the gate pre-activations), gx [B, H] (of cx).
 * GRU forward: ig, hg [B, 3H], bi, bh [3H] or NULL, x = hx [B, H]
 *   -> ws [B, 4H] (r, z, n and hn = hg_n + bh_n), hy [B, H].
 * GRU backward: ws_in, x = hx, ghy [B, H] -> gig, ghg [B, 3H] (of ig and hg), gx [B, H]
 *   (of hx). */
typedef struct {
    int64_t B, H;
    const char *ig, *hg, *bi, *bh, *x; /* forward (x also backward) */
    char *ws, *cy, *hy;
    const char *ws_in, *cy_in, *ghy, *gcy; /* backward */
    char *gig, *ghg, *gx;
} ct_rnn_cell_args;

typedef void (*ct_rnn_cell_fn)(bool backward, const ct_rnn_cell_args *a);

#endif
