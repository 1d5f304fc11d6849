/* Helpers shared by the indexing ops (index_select.c, gather_scatter.c, masked.c,
 * sort.c, index.c, index_advanced.c, index_put.c): index dtype and range checks,
 * restrided views, and the plan of advanced indexing (t[indices]). */
#ifndef CT_OPS_INDEX_UTIL_H
#define CT_OPS_INDEX_UTIL_H

#include "kernels/index.h"
#include "ops/internal.h"

/* Reports index (values NULL) or index_put (values, accumulate) to the record hook:
 * inputs self, the n indices, then values. */
void ct_index_trace(ct_op_id op, ct_tensor *t, int n, ct_tensor *const *indices,
                    ct_tensor *values, ct_tensor *out, bool accumulate);

/* Size of t along dim, a 0-d tensor counting as [1]. */
static inline int64_t ct_index_dim_size(const ct_tensor *t, int dim) {
    return t->ndim ? t->sizes[dim] : 1;
}

/* index as a contiguous int64 tensor (index itself, retained, when it already is one;
 * else a converted copy), unregistered.  int32 is accepted when allow_int32; any other
 * dtype fails with "<op>: <expect> (got <dtype>)". */
ct_tensor *ct_index_i64(const char *op, ct_tensor *index, bool allow_int32, const char *expect);

/* Checks every value of idx (read on the host as int64, ops/host.h) against
 * [-size, size) when allow_negative, else [0, size): "<op>: index 5 is out of bounds
 * for dimension 0 with size 3", prefixed by `what` (PyTorch's own wording for that op)
 * when given.  A tensor without values (meta) passes, as on PyTorch's meta device. */
bool ct_index_check_range(const char *op, const ct_tensor *idx, int dim, int64_t size,
                          bool allow_negative, const char *what);
/* The same check of n values already on the host. */
bool ct_index_check_values(const char *op, const int64_t *v, int64_t n, int dim, int64_t size,
                           bool allow_negative, const char *what);

/* A view of t (unregistered) with at least one dim: a 0-d tensor becomes [1]. */
ct_tensor *ct_index_at_least_1d(ct_tensor *t);

/* A view of t (unregistered) with index's sizes, except size dim_size and stride
 * dim_stride (elements) at dim; t's own strides elsewhere. */
ct_tensor *ct_index_restride(ct_tensor *t, const ct_tensor *index, int dim, int64_t dim_size,
                             int64_t dim_stride);

/* A contiguous copy of t broadcast to (ndim, sizes) and converted to dtype,
 * unregistered; t must broadcast to that shape.  With perm (else NULL), the copy's
 * dim i is dim perm[i] of the broadcast. */
ct_tensor *ct_index_broadcast_copy(const char *op, ct_tensor *t, int ndim, const int64_t *sizes,
                                   const int64_t *perm, ct_dtype dtype);

/* The shape of a recorded node's input i (for zeros shaped like it in backward). */
struct ct_node;
ct_shape ct_index_input_shape(const struct ct_node *n, int i);

/* ct_nonzero unregistered: int64 [count, ndim(t)] coordinates of t's nonzero elements. */
ct_tensor *ct_nonzero_new(ct_tensor *t);

/* Contiguous copy of t with t's dtype, or t itself (retained) when contiguous. */
ct_tensor *ct_index_contig(const char *op, ct_tensor *t);

/* ---- advanced indexing: t[indices] (ct_index), t[indices] = v (ct_index_put_) ----
 * indices[i] is NULL (the whole dim), an int64 tensor (indexes one dim; negative
 * values count from the end) or a bool/uint8 mask (indexes as many dims as it has,
 * through its nonzero coordinates; a 0-d mask indexes none and adds a dim of size 1
 * or 0); dims past the list are whole.  The index tensors broadcast together to a
 * shape B.  The result keeps t's whole dims in order and puts B where the indexed
 * dims were when those are adjacent, else first (PyTorch's rule).
 *
 * Both ops and their backwards work in the "rows" frame: t's indexed dims moved to
 * the front and flattened into one dim of P rows, [P, whole dims...]; `linear` (shape
 * B) holds the row each index position selects. */
typedef struct {
    int ndim;                     /* t's shape */
    int64_t sizes[CT_MAX_DIMS];
    uint32_t dims;                /* bit d: dim d of t is indexed */
    int pos;                      /* B's place among the whole dims of the result */
    int bnd;                      /* B */
    int64_t bshape[CT_MAX_DIMS];
} ct_adv_geom;

typedef struct {
    ct_adv_geom g;
    ct_tensor *linear;  /* int64, shape B, contiguous */
    ct_tensor *offsets; /* int64 [numel(B)]: the rows' element offsets in t */
    ct_put_args rows;   /* offsets and t's whole dims, for the row kernels */
} ct_adv_index;

/* Checks indices against t (dtypes, devices, counts, mask shapes, broadcasting,
 * ranges: PyTorch's errors) and fills p; false with the error set (p then holds
 * nothing to free). */
bool ct_adv_index_plan(const char *op, ct_tensor *t, int n, ct_tensor *const *indices,
                       ct_adv_index *p);
void ct_adv_index_free(ct_adv_index *p);
/* The result's shape (index's output, index_put_'s values broadcast to it); its
 * ndim is returned. */
int ct_adv_result_shape(const ct_adv_geom *g, int64_t *shape);
/* The result in the rows frame's order, B then the whole dims: its shape (ndim
 * returned) and, in perm, where each of its dims is in the result. */
int ct_adv_front_shape(const ct_adv_geom *g, int64_t *shape, ct_dims *perm);
/* The saved slot of the linear positions the indices select. */
enum { CT_ADV_SAVED_LINEAR };
/* Records what the backward needs on n: node->state.adv_index and the linear positions. */
struct ct_node;
void ct_adv_save(struct ct_node *n, const ct_adv_index *p);
/* The geometry recorded by ct_adv_save (lin: its saved linear positions). */
ct_adv_geom ct_adv_geom_of(const struct ct_node *n, const ct_tensor *lin);
/* Differentiable moves (registered results) into the rows frame and back: of a
 * tensor shaped like t ([P, whole...]) or like the result ([numel(B), whole...]). */
typedef enum { CT_ADV_SELF, CT_ADV_RESULT } ct_adv_frame;
ct_tensor *ct_adv_to_rows(ct_tensor *x, const ct_adv_geom *g, ct_adv_frame from);
ct_tensor *ct_adv_from_rows(ct_tensor *x, const ct_adv_geom *g, ct_adv_frame to);

#endif
