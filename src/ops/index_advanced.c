/* Advanced indexing: the plan shared by t[indices] (ct_index, here) and t[indices] = v
 * (ct_index_put_, index_put.c), the moves between the result, t and the rows frame
 * (see index_util.h), and ct_index with IndexBackward0. */
#include <stdatomic.h>
#include <string.h>

#include "autograd/node.h"
#include "core/iter.h"
#include "ops/host.h"
#include "ops/host_index.h"
#include "ops/index_util.h"

/* One index column: an int64 tensor indexing dim `dim` of t, or (dim -1) the shape
 * [count] a 0-d mask adds without indexing a dim. */
typedef struct {
    ct_tensor *idx;
    int dim;
} column;
#define MAX_COLUMNS (2 * CT_MAX_DIMS)

/* The columns of mask (bool/uint8) over t's dims from d: its nonzero coordinates. */
static bool mask_columns(const char *op, ct_tensor *t, ct_tensor *mask, int d, column *cols,
                         int *nc) {
    for (int j = 0; j < mask->ndim; j++) {
        if (mask->sizes[j] != t->sizes[d + j]) {
            char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
            ct_error("%s: The shape of the mask %s at index %d does not match the shape of the "
                     "indexed tensor %s at index %d", op,
                     ct_shape_str(mask->ndim, mask->sizes, a), j,
                     ct_shape_str(t->ndim, t->sizes, b), d + j);
            return false;
        }
    }
    ct_tensor *coords = ct_nonzero_new(mask); /* [count, mask->ndim] */
    if (!coords) return false;
    int64_t count = coords->sizes[0], stride = mask->ndim;
    bool ok = true;
    if (mask->ndim == 0) {
        ok = (cols[*nc].idx = ct_tensor_new(op, CT_SHAPE(count), CT_I64, CT_CPU)) != NULL;
        cols[(*nc)++].dim = -1;
    }
    for (int j = 0; j < mask->ndim && ok; j++) {
        cols[*nc].idx = ct_tensor_view_of(coords, 1, &count, &stride, coords->offset + j);
        ok = cols[*nc].idx != NULL;
        cols[(*nc)++].dim = d + j;
    }
    ct_release(coords);
    return ok;
}

/* Made on first use; NULL with the error when out of memory (the next use tries again). */
static _Atomic(ct_tensor *) all_dims;
ct_tensor *ct_index_all(void) {
    ct_tensor *t = atomic_load(&all_dims);
    if (t) return t;
    t = ct_tensor_new("CT_ALL", CT_SHAPE(0), CT_I64, CT_CPU);
    if (!t) return NULL;
    /* so many references that no sequence of releases frees it */
    atomic_store(&t->obj.refs, INT32_MAX / 2);
    ct_tensor *none = NULL;
    if (atomic_compare_exchange_strong(&all_dims, &none, t)) return t;
    atomic_store(&t->obj.refs, 1); /* another thread made it first */
    ct_release(t);
    return none;
}

/* indices as columns (checking dtypes, devices, counts and masks), with B's place. */
static int make_columns(const char *op, ct_tensor *t, int n, ct_tensor *const *indices,
                        column *cols, int *pos) {
    ct_tensor *all = CT_ALL;
    int used = 0, nc = 0;
    for (int i = 0; i < n; i++) {
        ct_tensor *ix = indices[i];
        if (!ix) {
            if (!ct_last_error())
                ct_error("%s: index %d is NULL (use CT_ALL for a whole dim)", op, i);
            return -1;
        }
        if (ix == all) {
            used++;
            continue;
        }
        if (ix->dtype != CT_I64 && ix->dtype != CT_BOOL && ix->dtype != CT_U8) {
            ct_error("%s: tensors used as indices must be long, byte or bool tensors (got %s "
                     "at position %d)", op, ct_dtype_name(ix->dtype), i);
            return -1;
        }
        if (!ct_check_same_device(op, t, ix)) return -1;
        used += ix->dtype == CT_I64 ? 1 : ix->ndim;
    }
    if (used > t->ndim || n > CT_MAX_DIMS) {
        ct_error("%s: too many indices for tensor of dimension %d (got %d)", op, t->ndim,
                 used > t->ndim ? used : n);
        return -1;
    }
    int d = 0, first = -1;
    bool gap = false, adjacent = true;
    for (int i = 0; i < n; i++) {
        ct_tensor *ix = indices[i];
        if (ix == all) {
            gap = first >= 0;
            d++;
            continue;
        }
        adjacent = adjacent && !gap;
        first = first < 0 ? d : first;
        if (ix->dtype == CT_I64) {
            cols[nc++] = (column){ct_retain(ix), d++};
        } else {
            bool ok = mask_columns(op, t, ix, d, cols, &nc);
            d += ix->ndim;
            if (!ok) {
                for (int c = 0; c < nc; c++) ct_release(cols[c].idx);
                return -1;
            }
        }
    }
    *pos = adjacent && first > 0 ? first : 0;
    return nc;
}

/* The columns' broadcast shape B into g; false with PyTorch's error listing them. */
static bool broadcast_columns(const char *op, const column *cols, int nc, ct_adv_geom *g) {
    g->bnd = 0;
    int c = 0;
    while (c < nc && ct_broadcast_shapes(g->bnd, g->bshape, cols[c].idx->ndim, cols[c].idx->sizes,
                                         &g->bnd, g->bshape))
        c++;
    if (c == nc) return true;
    char list[4 * CT_SHAPE_STR_MAX] = "", s[CT_SHAPE_STR_MAX];
    size_t len = 0;
    for (c = 0; c < nc && len < sizeof list; c++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", c ? ", " : "",
                                ct_shape_str(cols[c].idx->ndim, cols[c].idx->sizes, s));
    ct_error("%s: shape mismatch: indexing tensors could not be broadcast together with "
             "shapes %s", op, list);
    return false;
}

int ct_adv_result_shape(const ct_adv_geom *g, int64_t *shape) {
    int nd = 0, whole = 0;
    for (int d = 0; d < g->ndim; d++) {
        if (g->dims >> d & 1) continue;
        if (whole++ == g->pos) {
            memcpy(shape + nd, g->bshape, sizeof(int64_t) * (size_t)g->bnd);
            nd += g->bnd;
        }
        shape[nd++] = g->sizes[d];
    }
    if (whole <= g->pos) { /* B after every whole dim (or no whole dims) */
        memcpy(shape + nd, g->bshape, sizeof(int64_t) * (size_t)g->bnd);
        nd += g->bnd;
    }
    return nd;
}

int ct_adv_front_shape(const ct_adv_geom *g, int64_t *shape, ct_dims *perm) {
    int nd = g->bnd, whole = 0;
    memcpy(shape, g->bshape, sizeof(int64_t) * (size_t)nd);
    for (int i = 0; i < g->bnd; i++) perm->d[i] = g->pos + i;
    for (int d = 0; d < g->ndim; d++) {
        if (g->dims >> d & 1) continue;
        perm->d[nd] = whole < g->pos ? whole : whole + g->bnd;
        shape[nd++] = g->sizes[d];
        whole++;
    }
    perm->n = nd;
    return nd;
}

bool ct_adv_index_plan(const char *op, ct_tensor *t, int n, ct_tensor *const *indices,
                       ct_adv_index *p) {
    memset(p, 0, sizeof *p);
    if (n < 0) {
        ct_error("%s: the number of indices must be non-negative (got %d)", op, n);
        return false;
    }
    column cols[MAX_COLUMNS];
    ct_adv_geom *g = &p->g;
    int nc = make_columns(op, t, n, indices, cols, &g->pos);
    if (nc < 0) return false;
    g->ndim = t->ndim;
    memcpy(g->sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim);
    bool ok = broadcast_columns(op, cols, nc, g);
    int k = 0, whole = t->ndim;
    for (int c = 0; c < nc; c++) {
        if (cols[c].dim < 0) continue;
        g->dims |= 1u << cols[c].dim;
        k++, whole--;
    }
    if (ok && g->bnd + whole > CT_MAX_DIMS) {
        ct_error("%s: the indexing result would have %d dimensions (at most %d)", op,
                 g->bnd + whole, CT_MAX_DIMS);
        ok = false;
    }
    /* each column broadcast to B, contiguous, read on the host (not on meta: no values)
     * and checked against its dim */
    bool values = ct_has_values(t);
    const int64_t *colv[CT_MAX_DIMS];
    int64_t ksizes[CT_MAX_DIMS], kstrides[CT_MAX_DIMS];
    ct_tensor *bc[CT_MAX_DIMS] = {0};
    ct_host_buf cb[CT_MAX_DIMS] = {0};
    for (int c = 0, j = 0; c < nc && ok; c++) {
        int d = cols[c].dim;
        if (d < 0) continue;
        ok = (bc[j] = ct_index_broadcast_copy(op, cols[c].idx, g->bnd, g->bshape, NULL, CT_I64)) &&
             (!values || ((colv[j] = ct_host_read(op, bc[j], CT_I64, &cb[j])) &&
                          ct_index_check_values(op, colv[j], bc[j]->numel, d, t->sizes[d], true,
                                                NULL)));
        ksizes[j] = t->sizes[d];
        kstrides[j++] = t->strides[d];
    }
    int64_t count = ct_shape_numel(g->bnd, g->bshape);
    if (ok) {
        /* linear, saved for the backward's index_add, and the offsets go with t */
        ct_device dev = t->storage->device;
        p->linear = ct_tensor_new_dims(op, g->bnd, g->bshape, CT_I64, dev);
        p->offsets = ct_tensor_new(op, CT_SHAPE(count), CT_I64, dev);
        ok = p->linear && p->offsets;
    }
    if (ok && values) {
        ct_host_buf ob, lb;
        int64_t *off = ct_host_write(op, p->offsets, &ob);
        int64_t *lin = off ? ct_host_write(op, p->linear, &lb) : NULL;
        if (lin) {
            ct_host_index_offsets(k, colv, count, ksizes, kstrides, off, lin);
            ct_host_release(&lb);
        }
        if (off) ct_host_release(&ob);
        ok = lin != NULL;
    }
    if (ok) {
        ct_put_args *a = &p->rows;
        a->offsets = (const int64_t *)ct_tensor_data(p->offsets);
        a->nrows = count;
        for (int d = 0; d < t->ndim; d++) {
            if (g->dims >> d & 1) continue;
            a->rest_sizes[a->rest_ndim] = t->sizes[d];
            a->rest_strides[a->rest_ndim++] = t->strides[d];
        }
    }
    for (int j = 0; j < k; j++) {
        ct_host_release(&cb[j]);
        ct_release(bc[j]);
    }
    for (int c = 0; c < nc; c++) ct_release(cols[c].idx);
    if (!ok) ct_adv_index_free(p);
    return ok;
}

void ct_adv_index_free(ct_adv_index *p) {
    ct_release(p->linear);
    ct_release(p->offsets);
    p->linear = p->offsets = NULL;
}

void ct_adv_save(ct_node *n, const ct_adv_index *p) {
    n->state.adv_index = (ct_adv_index_state){p->g.dims, p->g.pos};
    ct_node_save(n, CT_ADV_SAVED_LINEAR, p->linear, false);
}

ct_adv_geom ct_adv_geom_of(const ct_node *n, const ct_tensor *lin) {
    const ct_input_meta *m = &n->in_meta[0];
    ct_adv_geom g = {.ndim = m->ndim, .dims = n->state.adv_index.dims, .pos = n->state.adv_index.pos,
                     .bnd = lin->ndim};
    memcpy(g.sizes, m->sizes, sizeof(int64_t) * (size_t)m->ndim);
    memcpy(g.bshape, lin->sizes, sizeof(int64_t) * (size_t)lin->ndim);
    return g;
}

/* ---- moves between frames (differentiable) ------------------------------ */

static bool is_identity(const ct_dims *p) {
    for (int i = 0; i < p->n; i++)
        if (p->d[i] != i) return false;
    return true;
}

static ct_dims inverse(const ct_dims *p) {
    ct_dims inv = {.n = p->n};
    for (int i = 0; i < p->n; i++) inv.d[p->d[i]] = i;
    return inv;
}

/* A frame move: a tensor shaped `shaped`, permuted by perm, reshaped to `rows`. */
typedef struct {
    ct_dims perm;
    ct_shape shaped, rows;
} frame;

/* t: its indexed dims first, then the whole ones; rows [P, whole...].  (shaped is
 * t's shape permuted so, what the rows unflatten to.) */
static frame self_frame(const ct_adv_geom *g) {
    frame f = {.rows = {.ndim = 1, .d = {1}}};
    for (int pass = 0; pass < 2; pass++) {
        for (int d = 0; d < g->ndim; d++) {
            if ((int)(g->dims >> d & 1) != (pass == 0)) continue;
            f.perm.d[f.perm.n++] = d;
            f.shaped.d[f.shaped.ndim++] = g->sizes[d];
            if (pass == 0) f.rows.d[0] *= g->sizes[d];
            else f.rows.d[f.rows.ndim++] = g->sizes[d];
        }
    }
    return f;
}

/* The result: B first, then the whole dims; rows [numel(B), whole...]. */
static frame result_frame(const ct_adv_geom *g) {
    frame f;
    int nd = f.shaped.ndim = ct_adv_front_shape(g, f.shaped.d, &f.perm);
    f.rows.ndim = 1 + nd - g->bnd;
    f.rows.d[0] = ct_shape_numel(g->bnd, g->bshape);
    memcpy(f.rows.d + 1, f.shaped.d + g->bnd, sizeof(int64_t) * (size_t)(nd - g->bnd));
    return f;
}

ct_tensor *ct_adv_to_rows(ct_tensor *x, const ct_adv_geom *g, ct_adv_frame from) {
    frame f = from == CT_ADV_SELF ? self_frame(g) : result_frame(g);
    return ct_reshape(is_identity(&f.perm) ? x : ct_permute(x, f.perm), f.rows);
}

ct_tensor *ct_adv_from_rows(ct_tensor *x, const ct_adv_geom *g, ct_adv_frame to) {
    frame f = to == CT_ADV_SELF ? self_frame(g) : result_frame(g);
    ct_tensor *y = ct_reshape(x, f.shaped);
    return is_identity(&f.perm) ? y : ct_permute(y, inverse(&f.perm));
}

/* ---- t[indices] ------------------------------------------------------------ */

ct_tensor *ct_index(ct_tensor *t, int n, ct_tensor *const *indices) {
    if (!ct_alive("ct_index", 1, t) || !ct_all_alive("ct_index", 3, indices, n)) return NULL;
    static const char *op = "ct_index";
    if (!t) return NULL;
    if (n > 0 && !indices) {
        ct_error("%s: the list of %d indices is NULL", op, n);
        return NULL;
    }
    ct_index_get_fn k = ct_kernel_index_get_for(CT_OP_index, t->storage->device, t->dtype);
    ct_adv_index p;
    if (!k || !ct_adv_index_plan(op, t, n, indices, &p)) return NULL;
    int64_t front[CT_MAX_DIMS];
    ct_dims perm;
    int nd = ct_adv_front_shape(&p.g, front, &perm);
    ct_tensor *out = ct_tensor_new_dims(op, nd, front, t->dtype, t->storage->device);
    if (out && out->numel) k(ct_tensor_data(t), ct_tensor_data(out), &p.rows);
    if (out && !is_identity(&perm)) { /* B goes after some whole dims */
        ct_dims inv = inverse(&perm);
        ct_tensor *r = ct_index_broadcast_copy(op, out, nd, front, inv.d, t->dtype);
        ct_release(out);
        out = r;
    }
    ct_node *node = out ? ct_record1(CT_OP_index, out, 1, &t) : NULL;
    if (node) ct_adv_save(node, &p);
    ct_adv_index_free(&p);
    ct_index_trace(CT_OP_index, t, n, indices, NULL, out, false);
    return out ? ct_ret(out) : NULL;
}

/* IndexBackward0: zeros(self).index_put_(indices, grad, accumulate=True), as
 * index_add over the rows frame (duplicates add up in index order). */
bool index_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *lin = ct_node_saved(n, CT_ADV_SAVED_LINEAR);
    if (!lin) return false;
    ct_adv_geom g = ct_adv_geom_of(n, lin);
    ct_tensor *src = ct_adv_to_rows(go[0], &g, CT_ADV_RESULT);
    if (!src) return false;
    ct_tensor *z = ct_zeros(self_frame(&g).rows, .dtype = go[0]->dtype, .device = go[0]->storage->device);
    ct_tensor *sum = ct_index_add(z, 0, ct_reshape(lin, CT_SHAPE(lin->numel)), src, 1);
    return (gi[0] = ct_adv_from_rows(sum, &g, CT_ADV_SELF)) != NULL;
}
