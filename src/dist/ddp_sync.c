/* DDP's construction (dist/ddp_impl.h): every rank describes its parameters and
 * buffers (names, dtypes, requires_grad, shapes) and the descriptions are
 * all-gathered, so that a mismatch fails on every rank with the same message (never a
 * hang in a later collective); then rank 0's values are broadcast, at construction
 * and (buffers) before each forward. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/ddp_impl.h"
#include "core/error.h"
#include "core/mem.h"

/* One line per parameter and buffer: "parameter fc.weight float32 requires_grad=True
 * [10, 32]\n" (buffers: "-" for requires_grad). */
static bool describe(ct_ddp_strbuf *b, const char *kind, int n, const char **names,
                     ct_tensor **ts) {
    bool param = !strcmp(kind, "parameter");
    for (int i = 0; i < n; i++) {
        char shape[CT_SHAPE_STR_MAX];
        ct_shape sh = ct_shape_of(ts[i]);
        const char *grad = !param                    ? "-"
                           : ct_requires_grad(ts[i]) ? "requires_grad=True"
                                                     : "requires_grad=False";
        if (!ct_ddp_append(b, "%s %s %s %s %s\n", kind, names[i], ct_dtype_name(ct_dtype_of(ts[i])),
                           grad, ct_shape_str(sh.ndim, sh.d, shape)))
            return false;
    }
    return true;
}

/* The error for the first line where two descriptions differ (mine: rank r's, theirs:
 * rank 0's; an empty line when a description has ended). */
static void report_mismatch(const char *mine, const char *theirs, int r) {
    char kind[16], name[512], dtype[16], grad[32], shape[CT_SHAPE_STR_MAX];
    char kind0[16], name0[512], dtype0[16], grad0[32], shape0[CT_SHAPE_STR_MAX];
    const char *fmt = "%15s %511s %15s %31s %255[^\n]";
    bool a = sscanf(mine, fmt, kind, name, dtype, grad, shape) == 5;
    bool b = sscanf(theirs, fmt, kind0, name0, dtype0, grad0, shape0) == 5;
    if (!a || !b || strcmp(kind, kind0) || strcmp(name, name0)) {
        ct_error("ct_ddp: DDP expects the same model on every rank, but rank %d has %s%s%s where "
                 "rank 0 has %s%s%s",
                 r, a ? kind : "nothing", a ? " " : "", a ? name : "", b ? kind0 : "nothing",
                 b ? " " : "", b ? name0 : "");
    } else if (strcmp(dtype, dtype0)) {
        ct_error("ct_ddp: %s '%s' has dtype %s on rank %d but %s on rank 0", kind, name, dtype, r,
                 dtype0);
    } else if (strcmp(grad, grad0)) {
        ct_error("ct_ddp: %s '%s' has %s on rank %d but %s on rank 0", kind, name, grad, r, grad0);
    } else {
        ct_error("ct_ddp: %s '%s' has shape %s on rank %d but %s on rank 0", kind, name, shape, r,
                 shape0);
    }
}

/* Every rank's description against rank 0's: 0, or -1 with the same error on every
 * rank (the first rank that differs, at its first differing line). */
static int verify_across_ranks(const ddp_state *s, const ct_ddp_strbuf *desc) {
    int rc = -1;
    char *padded = NULL, *texts = NULL;
    CT_SCOPE {
        int64_t len = (int64_t)desc->len + 1;
        ct_tensor *n = ct_tensor_from(&len, CT_I64, CT_SHAPE(1));
        if (!n ||
            ct_dist_all_reduce_with(n, (ct_dist_options){.group = s->group, .op = CT_DIST_MAX}))
            break;
        size_t max_len = (size_t)ct_item(n), all_len = (size_t)s->world * max_len;
        padded = ct_calloc(max_len, 1);
        texts = ct_malloc(all_len);
        if (!padded || !texts) {
            ct_error("ct_ddp: out of memory");
            break;
        }
        memcpy(padded, desc->text, desc->len);
        ct_tensor *mine = ct_tensor_from(padded, CT_U8, CT_SHAPE((int64_t)max_len));
        ct_tensor *all = ct_empty(CT_SHAPE((int64_t)all_len), .dtype = CT_U8);
        if (!mine || !all ||
            ct_dist_all_gather_into_tensor_with(all, mine, ct_ddp_group_options(s)) ||
            ct_copy_to_buffer(all, texts, CT_U8, all_len))
            break;
        rc = 0;
        for (int r = 1; r < s->world && rc == 0; r++) {
            const char *t = texts + (size_t)r * max_len, *t0 = texts;
            if (!strcmp(t, t0)) continue;
            while (*t && *t0) { /* to the first differing line */
                const char *e = strchr(t, '\n'), *e0 = strchr(t0, '\n');
                if (e - t != e0 - t0 || memcmp(t, t0, (size_t)(e - t))) break;
                t = e + 1;
                t0 = e0 + 1;
            }
            report_mismatch(t, t0, r);
            rc = -1;
        }
    }
    free(padded);
    free(texts);
    return rc;
}

int ct_ddp_check_models(const ddp_state *s, int n, int nb, const char **names, ct_tensor **ts) {
    ct_ddp_strbuf desc = {0};
    int rc = ct_ddp_append(&desc, "%s", "") && describe(&desc, "parameter", n, names, ts) &&
                     describe(&desc, "buffer", nb, names + n, ts + n)
                 ? verify_across_ranks(s, &desc)
                 : -1;
    free(desc.text);
    return rc;
}

/* PyTorch's _sync_module_states coalesces the tensors the same way. */
int ct_ddp_broadcast_from_rank0(const ddp_state *s, int n, ct_tensor **ts) {
    int rc = 0;
    CT_NO_GRAD CT_SCOPE {
        for (int dt = 1; dt < CT_NUM_DTYPES && rc == 0; dt++) {
            int k = 0;
            ct_tensor **flat_parts = ct_calloc((size_t)(n ? n : 1), sizeof *flat_parts);
            if (!flat_parts) {
                ct_error("ct_ddp: out of memory");
                rc = -1;
                break;
            }
            for (int i = 0; i < n; i++)
                if ((int)ct_dtype_of(ts[i]) == dt)
                    flat_parts[k++] = ct_reshape(ts[i], CT_SHAPE(-1));
            ct_tensor *flat = k ? ct_cat(k, flat_parts, 0) : NULL;
            free(flat_parts);
            if (!k) continue;
            if (!flat || ct_dist_broadcast_with(flat, ct_ddp_group_options(s))) {
                rc = -1;
                break;
            }
            if (s->rank == 0) continue;
            int64_t off = 0;
            for (int i = 0; i < n && rc == 0; i++) {
                if ((int)ct_dtype_of(ts[i]) != dt) continue;
                int64_t numel = ct_numel(ts[i]);
                if (!ct_copy_(ts[i], ct_view(ct_narrow(flat, 0, off, numel), ct_shape_of(ts[i]))))
                    rc = -1;
                off += numel;
            }
        }
    }
    return rc;
}

/* The model's buffers (borrowed), counted in *n; NULL with *n = 0 when it has none. */
static ct_tensor **buffers_of(ct_module *model, int *n) {
    *n = ct_buffers(model, NULL, 0);
    ct_tensor **b = *n ? ct_calloc((size_t)*n, sizeof *b) : NULL;
    if (*n && !b) {
        ct_error("ct_ddp: out of memory");
        *n = -1;
        return NULL;
    }
    if (*n) ct_buffers(model, b, *n);
    return b;
}

int ct_ddp_sync_buffers(const ddp_state *s) {
    int n, rc;
    ct_tensor **b = buffers_of(s->model, &n);
    rc = n < 0 ? -1 : n ? ct_ddp_broadcast_from_rank0(s, n, b) : 0;
    free(b);
    return rc;
}
