/* Anomaly mode: the public switches of the flags the engine reads, and the check the
 * engine runs on every node's gradients while the mode is on.  Forward call sites are
 * recorded on every node regardless, so turning it on only adds the checks. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"
#include "autograd/node.h"
#include "ops/host.h"
#include "ops/internal.h"

static _Atomic bool check_inf; /* ctorch's extension; PyTorch checks NaN only */

bool ct_set_detect_anomaly(bool enabled) { return atomic_exchange(&ct_anomaly_enabled, enabled); }

bool ct_is_anomaly_enabled(void) { return ct_anomaly_enabled; }

bool ct_set_anomaly_check_inf(bool enabled) { return atomic_exchange(&check_inf, enabled); }

ct_anomaly_guard ct_anomaly_begin(bool enabled) {
    return (ct_anomaly_guard){.prev = ct_set_detect_anomaly(enabled), .once = 1};
}

void ct_anomaly_end(ct_anomaly_guard *g) { ct_set_detect_anomaly(g->prev); }

/* The first bad element of g (NaN, or Inf when inf is set), -1 when none, -2 when its
 * values cannot be read (the error set). */
static int64_t first_bad(const ct_tensor *g, bool inf, bool *is_nan) {
    *is_nan = false;
    if (!ct_has_values(g)) return -1; /* meta: no values to check */
    ct_host_buf hb;
    const double *v = ct_host_read("anomaly mode", g, CT_F64, &hb);
    if (!v) return -2;
    int64_t bad = -1;
    for (int64_t k = 0; k < g->numel && bad < 0; k++)
        if (isnan(v[k]) || (inf && isinf(v[k]))) bad = k;
    *is_nan = bad >= 0 && isnan(v[bad]);
    ct_host_release(&hb);
    return bad;
}

/* PyTorch's message, then what ctorch adds: the forward op and its call site.  A
 * custom function's forward is its node's name less "Backward". */
bool ct_anomaly_check(ct_node *node, ct_tensor **grad_in) {
    bool inf = check_inf;
    for (int i = 0; i < node->n_in; i++) {
        ct_tensor *g = grad_in[i];
        bool is_nan;
        int64_t bad = g && ct_dtype_is_floating(g->dtype) ? first_bad(g, inf, &is_nan) : -1;
        if (bad == -2) return false;
        if (bad < 0) continue;
        const char *op = node->name ? node->name : ct_ops[node->op].name;
        int op_len = (int)strlen(op);
        if (node->name && op_len > 8 && !strcmp(op + op_len - 8, "Backward")) op_len -= 8;
        ct_error("Function '%s' returned %s values in its %dth output. The forward op was "
                 "%s%.*s, called at %s:%d.", ct_node_grad_name(node), is_nan ? "nan" : "inf", i,
                 node->name ? "" : "ct_", op_len, op, node->file ? node->file : "?", node->line);
        return false;
    }
    return true;
}
