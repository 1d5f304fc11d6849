/* Matrix products: mm, bmm, addmm, baddbmm, mv, dot (one GEMM each) and the
 * composites outer and matmul.  Backward formulas are written with these ops, so
 * higher-order gradients come for free. */
#include <string.h>

#include "autograd/node.h"
#include "core/iter.h"
#include "kernels/gemm.h"
#include "ops/internal.h"
#include "ops/trace.h"
#include "ops/options.h"
#include "ops/autocast.h"

/* Which dims of a tensor are a GEMM operand's batch, rows and cols (-1: absent,
 * size 1). */
typedef struct { int bd, rd, cd; } mat_dims;

static int64_t dim_size(const ct_tensor *t, int d) { return d < 0 ? 1 : t->sizes[d]; }
static int64_t dim_stride(const ct_tensor *t, int d) { return d < 0 ? 0 : t->strides[d]; }

/* t as an operand of the kernel dtype whose strides BLAS can take: t itself
 * (retained) or a contiguous converted copy.  Unregistered. */
static ct_tensor *gemm_operand(const char *op, ct_tensor *t, mat_dims md, ct_dtype kd) {
    bool tr;
    int64_t ld;
    if (t->dtype == kd && ct_blas_layout(dim_size(t, md.rd), dim_size(t, md.cd),
                                         dim_stride(t, md.rd), dim_stride(t, md.cd), &tr, &ld))
        return ct_retain(t);
    return ct_cast_new(op, t, kd);
}

/* out (shape) = beta * init + alpha * a @ b over batch entries: the forward of every
 * GEMM op.  init may be NULL (then beta is 0) and must broadcast to shape.  Returns an
 * unregistered tensor of a's dtype. */
static ct_tensor *gemm(ct_op_id op, ct_tensor *a, mat_dims ad, ct_tensor *b, mat_dims bd,
                       ct_tensor *init, double beta, double alpha, ct_shape shape) {
    ct_dtype dt = a->dtype, kd = ct_compute_dtype_for(op, a->storage->device, dt);
    ct_device dev = a->storage->device;
    ct_gemm_fn k = ct_compute_gemm_kernel(op, dev, dt);
    if (!k) return NULL;
    const char *name = ct_ops[op].fn;
    /* The output first: a size it cannot have fails before operands are copied. */
    ct_tensor *out = ct_tensor_new(name, shape, kd, dev);
    ct_tensor *A = out ? gemm_operand(name, a, ad, kd) : NULL, *B = A ? gemm_operand(name, b, bd, kd) : NULL;
    if (!B) {
        ct_release(out);
        out = NULL;
    }
    if (out) {
        if (!init) beta = 0;
        if (beta != 0) ct_copy_into(out, init);
        ct_gemm_args g = {
            .batch = dim_size(A, ad.bd), .m = dim_size(A, ad.rd), .k = dim_size(A, ad.cd),
            .n = dim_size(B, bd.cd), .a = ct_tensor_data(A), .b = ct_tensor_data(B),
            .c = ct_tensor_data(out), .a_bs = dim_stride(A, ad.bd),
            .a_rs = dim_stride(A, ad.rd), .a_cs = dim_stride(A, ad.cd),
            .b_bs = dim_stride(B, bd.bd), .b_rs = dim_stride(B, bd.rd),
            .b_cs = dim_stride(B, bd.cd), .alpha = alpha, .beta = beta};
        /* out is contiguous [batch?, m?, n?]: its row stride is n, batch stride m*n. */
        g.c_rs = g.n;
        g.c_bs = g.m * g.n;
        if (k(&g)) {
            out = ct_cast_result(name, out, dt);
        } else {
            ct_error("%s: out of memory for the %s matrix product's working buffers", name,
                     ct_dtype_name(kd));
            ct_release(out);
            out = NULL;
        }
    }
    ct_release(A);
    ct_release(B);
    return out;
}

static bool same_dtype(const char *op, const ct_tensor *a, const ct_tensor *b) {
    if (a->dtype == b->dtype) return true;
    ct_error("%s: expected both inputs to have the same dtype, but got %s and %s", op,
             ct_dtype_name(a->dtype), ct_dtype_name(b->dtype));
    return false;
}

static bool check_dim(const char *op, const char *what, const ct_tensor *t, int want) {
    if (t->ndim == want) return true;
    ct_error("%s: %s must be a %dD tensor (got %dD)", op, what, want, t->ndim);
    return false;
}

/* "ct_mm: shapes [64, 784] and [128, 10] cannot be multiplied (784 != 128)" */
static void cannot_multiply(const char *op, const ct_tensor *a, const ct_tensor *b, int64_t ka,
                            int64_t kb) {
    char sa[CT_SHAPE_STR_MAX], sb[CT_SHAPE_STR_MAX];
    ct_error("%s: shapes %s and %s cannot be multiplied (%lld != %lld)", op,
             ct_shape_str(a->ndim, a->sizes, sa), ct_shape_str(b->ndim, b->sizes, sb),
             (long long)ka, (long long)kb);
}

/* Checks shared by the GEMM ops: non-NULL, same device and dtype. */
static bool check_pair(const char *op, const ct_tensor *a, const ct_tensor *b) {
    return a && b && ct_check_same_device(op, a, b) && same_dtype(op, a, b);
}

/* Saved tensors of the products: the left factor (a, mat1, batch1) and the right. */
enum { SV_LEFT, SV_RIGHT };

/* Records a node over inputs, saving the inputs a formula needs; reports the call. */
static void record(ct_op_id op, ct_tensor *out, int n_in, ct_tensor *const *in, int ia, int ib,
                   double beta, double alpha) {
    ct_addmm_attrs a = {beta, alpha}; /* addmm's and baddbmm's attributes are alike */
    CT_TRACE_ATTRS(op, n_in, in, 1, &out, &a);
    ct_node *n = ct_node_record(op, n_in, in, 1);
    if (!n) return;
    if (op == CT_OP_addmm) n->attrs.addmm = a;
    if (op == CT_OP_baddbmm) n->attrs.baddbmm = (ct_baddbmm_attrs){beta, alpha};
    /* d/da needs b and d/db needs a. */
    if (n->needs_grad[ia]) ct_node_save(n, SV_RIGHT, in[ib], false);
    if (n->needs_grad[ib]) ct_node_save(n, SV_LEFT, in[ia], false);
    ct_node_set_output(n, out, 0);
    ct_release(n);
}

static const mat_dims MAT = {-1, 0, 1}, BATCH = {0, 1, 2};

ct_tensor *ct_mm(ct_tensor *a, ct_tensor *b) {
    if (!ct_alive("ct_mm", 1, a) || !ct_alive("ct_mm", 2, b)) return NULL;
    CT_AUTOCAST_OP(CT_OP_mm, ct_mm(a, b), a, b);
    if (!check_pair("ct_mm", a, b) || !check_dim("ct_mm", "self", a, 2) ||
        !check_dim("ct_mm", "mat2", b, 2))
        return NULL;
    if (a->sizes[1] != b->sizes[0]) {
        cannot_multiply("ct_mm", a, b, a->sizes[1], b->sizes[0]);
        return NULL;
    }
    ct_tensor *out = gemm(CT_OP_mm, a, MAT, b, MAT, NULL, 0, 1, CT_SHAPE(a->sizes[0], b->sizes[1]));
    if (!out) return NULL;
    ct_tensor *in[] = {a, b};
    record(CT_OP_mm, out, 2, in, 0, 1, 0, 1);
    return ct_ret(out);
}

static bool check_bmm(const char *op, const ct_tensor *a, const ct_tensor *b) {
    if (!check_pair(op, a, b) || !check_dim(op, "batch1", a, 3) || !check_dim(op, "batch2", b, 3))
        return false;
    if (b->sizes[0] != a->sizes[0] || b->sizes[1] != a->sizes[2]) {
        char want[CT_SHAPE_STR_MAX], got[CT_SHAPE_STR_MAX];
        ct_error("%s: Expected size for first two dimensions of batch2 tensor to be: %s but "
                 "got: %s.", op, ct_shape_str(2, (int64_t[]){a->sizes[0], a->sizes[2]}, want),
                 ct_shape_str(2, b->sizes, got));
        return false;
    }
    return true;
}

ct_tensor *ct_bmm(ct_tensor *a, ct_tensor *b) {
    if (!ct_alive("ct_bmm", 1, a) || !ct_alive("ct_bmm", 2, b)) return NULL;
    CT_AUTOCAST_OP(CT_OP_bmm, ct_bmm(a, b), a, b);
    if (!check_bmm("ct_bmm", a, b)) return NULL;
    ct_tensor *out = gemm(CT_OP_bmm, a, BATCH, b, BATCH, NULL, 0, 1,
                          CT_SHAPE(a->sizes[0], a->sizes[1], b->sizes[2]));
    if (!out) return NULL;
    ct_tensor *in[] = {a, b};
    record(CT_OP_bmm, out, 2, in, 0, 1, 0, 1);
    return ct_ret(out);
}

/* input must broadcast to the product's shape (PyTorch's expand error otherwise). */
static bool check_init(const char *op, const ct_tensor *input, ct_shape s) {
    int nd;
    int64_t out[CT_MAX_DIMS];
    if (input->ndim <= s.ndim && ct_broadcast_shapes(input->ndim, input->sizes, s.ndim, s.d, &nd, out) &&
        !memcmp(out, s.d, sizeof(int64_t) * (size_t)s.ndim))
        return true;
    char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
    ct_error("%s: self of size %s cannot be broadcast to the product's size %s", op,
             ct_shape_str(input->ndim, input->sizes, a), ct_shape_str(s.ndim, s.d, b));
    return false;
}

static ct_tensor *add_product(ct_op_id op, const char *name, ct_tensor *input, ct_tensor *a,
                              ct_tensor *b, ct_addmm_options o, ct_shape s, mat_dims md) {
    double beta = ct_opt_or(o.beta, 1), alpha = ct_opt_or(o.alpha, 1);
    if (!input || !check_pair(name, input, a) || !check_init(name, input, s)) return NULL;
    ct_tensor *out = gemm(op, a, md, b, md, input, beta, alpha, s);
    if (!out) return NULL;
    ct_tensor *in[] = {input, a, b};
    record(op, out, 3, in, 1, 2, beta, alpha);
    return ct_ret(out);
}

ct_tensor *ct_addmm_with(ct_tensor *input, ct_tensor *m1, ct_tensor *m2, ct_addmm_options o) {
    if (!ct_alive("ct_addmm", 1, input) || !ct_alive("ct_addmm", 2, m1) ||
        !ct_alive("ct_addmm", 3, m2))
        return NULL;
    CT_AUTOCAST_OP(CT_OP_addmm, ct_addmm_with(input, m1, m2, o), input, m1, m2);
    if (!check_pair("ct_addmm", m1, m2) || !check_dim("ct_addmm", "mat1", m1, 2) ||
        !check_dim("ct_addmm", "mat2", m2, 2))
        return NULL;
    if (m1->sizes[1] != m2->sizes[0]) {
        cannot_multiply("ct_addmm", m1, m2, m1->sizes[1], m2->sizes[0]);
        return NULL;
    }
    return add_product(CT_OP_addmm, "ct_addmm", input, m1, m2, o,
                       CT_SHAPE(m1->sizes[0], m2->sizes[1]), MAT);
}

ct_tensor *ct_baddbmm_with(ct_tensor *input, ct_tensor *b1, ct_tensor *b2, ct_addmm_options o) {
    if (!ct_alive("ct_baddbmm", 1, input) || !ct_alive("ct_baddbmm", 2, b1) ||
        !ct_alive("ct_baddbmm", 3, b2))
        return NULL;
    CT_AUTOCAST_OP(CT_OP_baddbmm, ct_baddbmm_with(input, b1, b2, o), input, b1, b2);
    if (!check_bmm("ct_baddbmm", b1, b2)) return NULL;
    return add_product(CT_OP_baddbmm, "ct_baddbmm", input, b1, b2, o,
                       CT_SHAPE(b1->sizes[0], b1->sizes[1], b2->sizes[2]), BATCH);
}

ct_tensor *ct_mv(ct_tensor *a, ct_tensor *v) {
    if (!ct_alive("ct_mv", 1, a) || !ct_alive("ct_mv", 2, v)) return NULL;
    if (!check_pair("ct_mv", a, v) || !check_dim("ct_mv", "self", a, 2) ||
        !check_dim("ct_mv", "vec", v, 1))
        return NULL;
    if (a->sizes[1] != v->sizes[0]) {
        cannot_multiply("ct_mv", a, v, a->sizes[1], v->sizes[0]);
        return NULL;
    }
    ct_tensor *out = gemm(CT_OP_mv, a, MAT, v, (mat_dims){-1, 0, -1}, NULL, 0, 1,
                          CT_SHAPE(a->sizes[0]));
    if (!out) return NULL;
    ct_tensor *in[] = {a, v};
    record(CT_OP_mv, out, 2, in, 0, 1, 0, 1);
    return ct_ret(out);
}

ct_tensor *ct_dot(ct_tensor *a, ct_tensor *b) {
    if (!ct_alive("ct_dot", 1, a) || !ct_alive("ct_dot", 2, b)) return NULL;
    if (!a || !b || !ct_check_same_device("ct_dot", a, b)) return NULL;
    if (a->ndim != 1 || b->ndim != 1) {
        ct_error("ct_dot: 1D tensors expected, but got %dD and %dD tensors", a->ndim, b->ndim);
        return NULL;
    }
    if (!same_dtype("ct_dot", a, b)) return NULL;
    if (a->sizes[0] != b->sizes[0]) {
        ct_error("ct_dot: inconsistent tensor size, expected tensor [%lld] and src [%lld] to have "
                 "the same number of elements, but got %lld and %lld elements respectively",
                 (long long)a->sizes[0], (long long)b->sizes[0], (long long)a->sizes[0],
                 (long long)b->sizes[0]);
        return NULL;
    }
    /* A [1, k] row times a [k, 1] column. */
    ct_tensor *out = gemm(CT_OP_dot, a, (mat_dims){-1, -1, 0}, b, (mat_dims){-1, 0, -1}, NULL, 0,
                          1, CT_SHAPE());
    if (!out) return NULL;
    ct_tensor *in[] = {a, b};
    record(CT_OP_dot, out, 2, in, 0, 1, 0, 1);
    return ct_ret(out);
}

ct_tensor *ct_outer(ct_tensor *a, ct_tensor *b) {
    if (!ct_alive("ct_outer", 1, a) || !ct_alive("ct_outer", 2, b)) return NULL;
    if (!a || !b) return NULL;
    if (a->ndim != 1 || b->ndim != 1) {
        ct_error("ct_outer: Expected 1-D argument %s, but got %d-D", a->ndim != 1 ? "self" : "vec2",
                 a->ndim != 1 ? a->ndim : b->ndim);
        return NULL;
    }
    ct_tensor *out = NULL;
    CT_SCOPE {
        out = ct_keep(ct_mul(ct_view(a, CT_SHAPE(-1, 1)), ct_view(b, CT_SHAPE(1, -1))));
    }
    return out;
}

/* ---- matmul -------------------------------------------------------------- */

/* lead sizes followed by tail sizes. */
static ct_shape shape_concat(const int64_t *lead, int nlead, const int64_t *tail, int ntail) {
    ct_shape s = {.ndim = nlead + ntail};
    memcpy(s.d, lead, sizeof(int64_t) * (size_t)nlead);
    memcpy(s.d + nlead, tail, sizeof(int64_t) * (size_t)ntail);
    return s;
}

/* Broadcast batch dims, then one bmm over [B, n, k] @ [B, k, m]. */
static ct_tensor *matmul_batched(ct_tensor *a, ct_tensor *b) {
    int na = a->ndim, nb = b->ndim;
    /* 1-D operands become [1, k] / [k, 1]; the added dim is dropped at the end. */
    ct_tensor *a2 = na == 1 ? ct_view(a, CT_SHAPE(1, -1)) : a;
    ct_tensor *b2 = nb == 1 ? ct_view(b, CT_SHAPE(-1, 1)) : b;
    if (!a2 || !b2) return NULL;
    int64_t n = a2->sizes[a2->ndim - 2], k = a2->sizes[a2->ndim - 1], m = b2->sizes[b2->ndim - 1];
    int nbatch;
    int64_t batch[CT_MAX_DIMS];
    if (!ct_broadcast_shapes(a2->ndim - 2, a2->sizes, b2->ndim - 2, b2->sizes, &nbatch, batch)) {
        int la = a2->ndim - 2, lb = b2->ndim - 2, nn = la > lb ? la : lb;
        for (int d = nn - 1; d >= 0; d--) {
            int64_t x = d - (nn - la) >= 0 ? a2->sizes[d - (nn - la)] : 1;
            int64_t y = d - (nn - lb) >= 0 ? b2->sizes[d - (nn - lb)] : 1;
            if (x != y && x != 1 && y != 1) {
                ct_error("ct_matmul: The size of tensor a (%lld) must match the size of tensor b "
                         "(%lld) at non-singleton dimension %d", (long long)x, (long long)y, d);
                break;
            }
        }
        return NULL;
    }
    int64_t B = ct_shape_numel(nbatch, batch), bytes;
    /* The output's size is checked before broadcast operands are copied. */
    if (__builtin_mul_overflow(B, n, &bytes) || __builtin_mul_overflow(bytes, m, &bytes) ||
        __builtin_mul_overflow(bytes, (int64_t)ct_dtype_size(a->dtype), &bytes)) {
        ct_error("ct_matmul: the result of %lld products of [%lld, %lld] x [%lld, %lld] is too large",
                 (long long)B, (long long)n, (long long)k, (long long)k, (long long)m);
        return NULL;
    }
    ct_tensor *ea = ct_expand(a2, shape_concat(batch, nbatch, (int64_t[]){n, k}, 2));
    ct_tensor *eb = ct_expand(b2, shape_concat(batch, nbatch, (int64_t[]){k, m}, 2));
    ct_tensor *r = ct_bmm(ct_reshape(ea, CT_SHAPE(B, n, k)), ct_reshape(eb, CT_SHAPE(B, k, m)));
    /* Result shape: batch, then n unless a was 1-D, then m unless b was 1-D. */
    int64_t tail[2];
    int nt = 0;
    if (na > 1) tail[nt++] = n;
    if (nb > 1) tail[nt++] = m;
    return ct_view(r, shape_concat(batch, nbatch, tail, nt));
}

static ct_tensor *matmul(ct_tensor *a, ct_tensor *b) {
    int na = a->ndim, nb = b->ndim;
    if (na == 1 && nb == 1) return ct_dot(a, b);
    if (na == 2 && nb == 1) return ct_mv(a, b);
    if (na == 1 && nb == 2) return ct_view(ct_mm(ct_view(a, CT_SHAPE(1, -1)), b), CT_SHAPE(-1));
    if (na == 2 && nb == 2) return ct_mm(a, b);
    if (na >= 3 && nb <= 2) {
        /* Fold a's batch dims into its rows: one mm (a view when a allows it). */
        int64_t k = a->sizes[na - 1];
        ct_tensor *fa = ct_reshape(a, CT_SHAPE(-1, k));
        ct_tensor *r = nb == 1 ? ct_mv(fa, b) : ct_mm(fa, b);
        ct_shape s = shape_concat(a->sizes, na - 1, &b->sizes[1], nb - 1);
        return ct_view(r, s);
    }
    return matmul_batched(a, b);
}

ct_tensor *ct_matmul(ct_tensor *a, ct_tensor *b) {
    if (!ct_alive("ct_matmul", 1, a) || !ct_alive("ct_matmul", 2, b)) return NULL;
    CT_AUTOCAST_OP(CT_OP_mm, ct_matmul(a, b), a, b); /* a composite of mm's row */
    if (!a || !b) return NULL;
    if (a->ndim == 0 || b->ndim == 0) {
        ct_error("ct_matmul: both arguments to matmul need to be at least 1D, but they are %dD "
                 "and %dD", a->ndim, b->ndim);
        return NULL;
    }
    int64_t ka = a->sizes[a->ndim - 1], kb = b->sizes[b->ndim == 1 ? 0 : b->ndim - 2];
    if (ka != kb) {
        cannot_multiply("ct_matmul", a, b, ka, kb);
        return NULL;
    }
    if (!check_pair("ct_matmul", a, b)) return NULL;
    ct_tensor *out = NULL;
    CT_SCOPE { out = ct_keep(matmul(a, b)); }
    return out;
}

/* ---- backward formulas ------------------------------------------------ */

static ct_tensor *mT(ct_tensor *t) { return ct_transpose(t, -2, -1); }

/* The (beta, alpha) of addmm and baddbmm; mm's and bmm's are (0, 1). */
static ct_addmm_attrs scales_of(const ct_node *n) {
    if (n->op == CT_OP_addmm) return n->attrs.addmm;
    if (n->op == CT_OP_baddbmm) return (ct_addmm_attrs){n->attrs.baddbmm.beta, n->attrs.baddbmm.alpha};
    return (ct_addmm_attrs){0, 1};
}

/* grad_in[ia] = alpha * g @ b^T, grad_in[ib] = alpha * a^T @ g, for mm / bmm. */
static bool product_backward(ct_node *n, ct_tensor *g, ct_tensor **gi, int ia, int ib,
                             ct_tensor *(*mul)(ct_tensor *, ct_tensor *)) {
    double alpha = scales_of(n).alpha;
    if (n->needs_grad[ia]) {
        ct_tensor *r = mul(g, mT(ct_node_saved(n, SV_RIGHT)));
        if (!(gi[ia] = alpha == 1 ? r : ct_mul_scalar(r, alpha))) return false;
    }
    if (n->needs_grad[ib]) {
        ct_tensor *r = mul(mT(ct_node_saved(n, SV_LEFT)), g);
        if (!(gi[ib] = alpha == 1 ? r : ct_mul_scalar(r, alpha))) return false;
    }
    return true;
}

bool mm_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return product_backward(n, go[0], gi, 0, 1, ct_mm);
}

bool bmm_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return product_backward(n, go[0], gi, 0, 1, ct_bmm);
}

/* The engine sums input's gradient down to its (broadcast) shape. */
static bool add_product_backward(ct_node *n, ct_tensor **go, ct_tensor **gi,
                                 ct_tensor *(*mul)(ct_tensor *, ct_tensor *)) {
    double beta = scales_of(n).beta;
    if (n->needs_grad[0] && !(gi[0] = beta == 1 ? go[0] : ct_mul_scalar(go[0], beta)))
        return false;
    return product_backward(n, go[0], gi, 1, 2, mul);
}

bool addmm_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return add_product_backward(n, go, gi, ct_mm);
}

bool baddbmm_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return add_product_backward(n, go, gi, ct_bmm);
}

bool mv_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    if (n->needs_grad[0] && !(gi[0] = ct_outer(go[0], ct_node_saved(n, SV_RIGHT)))) return false;
    if (n->needs_grad[1] && !(gi[1] = ct_mv(ct_t(ct_node_saved(n, SV_LEFT)), go[0]))) return false;
    return true;
}

bool dot_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    if (n->needs_grad[0] && !(gi[0] = ct_mul(go[0], ct_node_saved(n, SV_RIGHT)))) return false;
    if (n->needs_grad[1] && !(gi[1] = ct_mul(go[0], ct_node_saved(n, SV_LEFT)))) return false;
    return true;
}
