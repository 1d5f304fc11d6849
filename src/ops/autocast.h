/* Autocast at op entry (the public side is ctorch/amp.h).
 *
 * An op whose row in ops.def is not KEEP starts with CT_AUTOCAST_OP (or, for a
 * Tensor[] argument, CT_AUTOCAST_LIST): naming its op, the call that runs it again
 * and its tensor parameters.  Outside an autocast region that is one predictable
 * branch on a thread-local; inside, the parameters are replaced by their casts and the
 * call runs with autocast excluded, so the op's own inner ops (a composite's parts)
 * are not cast again, as PyTorch excludes its Autocast dispatch key:
 *
 *     ct_tensor *ct_mm(ct_tensor *a, ct_tensor *b) {
 *         CT_AUTOCAST_OP(CT_OP_mm, ct_mm(a, b), a, b);
 *         ...
 *
 * Ops run by the autograd engine (backward formulas) are never cast. */
#ifndef CT_OPS_AUTOCAST_H
#define CT_OPS_AUTOCAST_H

#include "core/tensor_impl.h"
#include "kernels/op_id.h"

/* What an op does inside an autocast region: its row's AUTOCAST column. */
typedef enum {
    CT_AUTOCAST_KEEP,    /* runs in whatever it is given */
    CT_AUTOCAST_LOWER,   /* runs in the region's dtype (bfloat16, float16) */
    CT_AUTOCAST_FP32,    /* runs in float32 */
    CT_AUTOCAST_PROMOTE, /* runs in the widest floating dtype of its inputs */
} ct_autocast_policy;

extern const ct_autocast_policy ct_autocast_policy_of[CT_NUM_OPS];

/* Non-zero while this thread is in an enabled autocast region and no autocast op is
 * running (the one branch an op pays outside autocast). */
extern _Thread_local int ct_autocast_on;

#define CT_AUTOCAST_MAX_INPUTS 6

/* One op's casts, on its stack. */
typedef struct ct_autocast_frame {
    int n;
    ct_tensor *casts[CT_AUTOCAST_MAX_INPUTS]; /* owned; NULL where the input was kept */
    ct_tensor **list; /* CT_AUTOCAST_LIST: the inputs as the op sees them (owned) */
    ct_tensor *const *src; /* the inputs as given (borrowed): what each cast was made of */
    ct_tensor *src_args[CT_AUTOCAST_MAX_INPUTS];
    struct ct_autocast_frame *prev; /* the frame of the op running when this one began */
} ct_autocast_frame;

/* When t is an input an autocast op is running on that was cast from a tensor without
 * history (a weight, the batch, a view of either), or a view of such a cast: that
 * tensor (or the same view of it), a new reference; else NULL.  Saving it (alive
 * anyway) instead of the cast for backward keeps a copy of it out of the activations;
 * the backward casts it again (autograd/node.c).  A view of a weight that has history
 * (a transposed weight) keeps its cached cast saved: a recurrent layer's steps share
 * it. */
ct_tensor *ct_autocast_cast_source(ct_tensor *t);
/* The reduced dtype (bfloat16, float16) of an input of the autocast op this thread is
 * running, as given before its casts; UNSET when none is reduced or no autocast op
 * runs.  A promoted op may keep what only its backward reads in it. */
ct_dtype ct_autocast_narrowest_input(void);

/* Replaces in[i] (n of them, NULL entries allowed) by its cast where op's policy asks;
 * false (nothing done) when the op keeps its inputs here (its policy, or a backward
 * formula's op).  On true, the caller runs the op on in[] and then calls
 * ct_autocast_exit. */
bool ct_autocast_enter(ct_autocast_frame *f, ct_op_id op, int n, ct_tensor **in);
/* The same for a Tensor[] argument: *ts is replaced by an array of n casts. */
bool ct_autocast_enter_list(ct_autocast_frame *f, ct_op_id op, int n, ct_tensor *const **ts);
/* Ends what ct_autocast_enter began: autocast again for later ops, casts released. */
void ct_autocast_exit(ct_autocast_frame *f);

#define CT_AUTOCAST_RUN_(call)                                                         \
    do {                                                                               \
        __typeof__(call) ct_ac_r_ = call;                                              \
        ct_autocast_exit(&ct_ac_f_);                                                   \
        return ct_ac_r_;                                                               \
    } while (0)

/* The parameters are named, not passed by address: the fast path keeps them in
 * registers.  In the slow path they go through an array and are assigned back. */
#define CT_AUTOCAST_OP(op, call, ...)                                                  \
    do {                                                                               \
        if (__builtin_expect(ct_autocast_on != 0, 0)) {                                \
            ct_autocast_frame ct_ac_f_;                                                \
            ct_tensor *ct_ac_v_[] = {__VA_ARGS__};                                     \
            if (ct_autocast_enter(&ct_ac_f_, op, (int)(sizeof ct_ac_v_ / sizeof *ct_ac_v_), \
                                  ct_ac_v_)) {                                         \
                CT_AC_SET_(CT_AC_NARGS_(__VA_ARGS__), ct_ac_v_, __VA_ARGS__)           \
                CT_AUTOCAST_RUN_(call);                                                \
            }                                                                          \
        }                                                                              \
    } while (0)
#define CT_AC_NARGS_(...) CT_AC_NARGS_I_(__VA_ARGS__, 6, 5, 4, 3, 2, 1, 0)
#define CT_AC_NARGS_I_(_1, _2, _3, _4, _5, _6, n, ...) n
#define CT_AC_SET_(n, v, ...) CT_AC_SET_I_(n, v, __VA_ARGS__)
#define CT_AC_SET_I_(n, v, ...) CT_AC_SET_##n(v, __VA_ARGS__)
#define CT_AC_SET_1(v, a) a = v[0];
#define CT_AC_SET_2(v, a, b) CT_AC_SET_1(v, a) b = v[1];
#define CT_AC_SET_3(v, a, b, c) CT_AC_SET_2(v, a, b) c = v[2];
#define CT_AC_SET_4(v, a, b, c, d) CT_AC_SET_3(v, a, b, c) d = v[3];
#define CT_AC_SET_5(v, a, b, c, d, e) CT_AC_SET_4(v, a, b, c, d) e = v[4];
#define CT_AC_SET_6(v, a, b, c, d, e, f) CT_AC_SET_5(v, a, b, c, d, e) f = v[5];

/* ts: a `ct_tensor *const *` parameter holding n tensors. */
#define CT_AUTOCAST_LIST(op, call, n, ts)                                              \
    do {                                                                               \
        if (__builtin_expect(ct_autocast_on != 0, 0)) {                                \
            ct_autocast_frame ct_ac_f_;                                                \
            if (ct_autocast_enter_list(&ct_ac_f_, op, n, &(ts))) CT_AUTOCAST_RUN_(call); \
        }                                                                              \
    } while (0)

#endif
