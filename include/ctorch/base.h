/* ctorch/base.h — objects, reference counts, scopes, errors, dtypes, devices, shapes.
 *
 * Every object ctorch hands out (tensor, node, module, ...) starts with a reference
 * count.  An object returned by an op is also registered with the innermost open
 * scope; closing the scope releases it.  Outside any scope the caller owns it and
 * calls ct_release().  ct_keep() hands an object to the enclosing scope.
 *
 *     CT_SCOPE {
 *         ct_tensor *y = ct_mul(x, x);     // freed when the scope closes
 *         total += ct_item(ct_sum(y));
 *     }
 *
 * Note: `break` inside CT_SCOPE { } leaves the scope block itself (it is a one-pass
 * loop), not an enclosing loop.  Inside a loop body write `CT_SCOPE_HERE;` as the
 * first statement instead: the scope then closes at the end of that block, on
 * break, continue and return too.
 */
#ifndef CTORCH_BASE_H
#define CTORCH_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

/* ---- objects ---------------------------------------------------------- */

void *ct_retain(void *obj);  /* returns obj; NULL-safe */
#define ct_retain(obj) CT_AT(ct_retain(obj))
void ct_release(void *obj);  /* NULL-safe */
#define ct_release(obj) CT_AT(ct_release(obj))
void *ct_keep(void *obj);    /* hand obj to the enclosing scope; returns obj */
#define ct_keep(obj) CT_AT(ct_keep(obj))

/* A released object must not be given to any ct_ function again; its memory may
 * already hold another object.  To find such a use, run with CT_DEBUG_LIFETIME=1 in
 * the environment (a build configured with -DCTORCH_DEBUG_LIFETIME=ON has it on by
 * default; CT_DEBUG_LIFETIME=0 then turns it off): released memory is then held back
 * instead of reused, and every function refuses a released object with its failure
 * value and "ct_sum: argument 1 was released (use after free)".  Under
 * AddressSanitizer a read through a data pointer of a released tensor is reported. */

/* ---- scopes ----------------------------------------------------------- */

/* What CT_SCOPE and CT_SCOPE_HERE keep on the stack. */
typedef struct {
    int depth; /* the scope's depth, checked when it closes */
    int once;  /* CT_SCOPE's loop runs its body once */
} ct_scope_guard;
/* Opens a scope (CT_SCOPE and CT_SCOPE_HERE call it): objects returned from now on
 * are registered with it. */
ct_scope_guard ct_scope_begin(void);
#define ct_scope_begin(...) CT_AT(ct_scope_begin(__VA_ARGS__))
/* Closes the scope g opened, releasing what was registered with it. */
void ct_scope_end(ct_scope_guard *g);
#define ct_scope_end(g) CT_AT(ct_scope_end(g))
/* How many scopes are open on this thread (0: none, the caller owns what it gets). */
int ct_scope_depth(void);
#define ct_scope_depth(...) CT_AT(ct_scope_depth(__VA_ARGS__))

#define CT_CAT_(a, b) a##b
#define CT_CAT(a, b) CT_CAT_(a, b) /* pastes a and b after expanding them */
/* CT_SCOPE { ... }: a block whose returned objects are released at its end (a one-pass
 * loop: `break` leaves the block). */
#define CT_SCOPE                                                                   \
    for (ct_scope_guard CT_CAT(ct_scope_, __LINE__)                               \
             __attribute__((cleanup(ct_scope_end))) = ct_scope_begin();           \
         CT_CAT(ct_scope_, __LINE__).once; CT_CAT(ct_scope_, __LINE__).once = 0)
/* CT_SCOPE_HERE; as a block's first statement: the rest of the block is a scope,
 * closed at its end, on break, continue and return too. */
#define CT_SCOPE_HERE                                                              \
    ct_scope_guard CT_CAT(ct_scope_, __LINE__) __attribute__((cleanup(ct_scope_end))) = \
        ct_scope_begin()

/* ---- errors ----------------------------------------------------------- */

/* A failing call returns NULL (or -1) and sets a thread-local message such as
 * "ct_matmul: shapes [64, 784] and [128, 10] cannot be multiplied (784 != 128)".
 * A call given a NULL tensor returns NULL and keeps the first message, so a chain
 * of calls can be checked once at its end. */
const char *ct_last_error(void);  /* NULL when no error is pending */
#define ct_last_error(...) CT_AT(ct_last_error(__VA_ARGS__))
void ct_clear_error(void);         /* forgets the pending error, so the next one is kept */
#define ct_clear_error(...) CT_AT(ct_clear_error(__VA_ARGS__))
/* Called with each error's message and the call site (file:line) of the failing call. */
typedef void (*ct_error_handler)(const char *message, const char *file, int line);
ct_error_handler ct_set_error_handler(ct_error_handler h);  /* returns the old one */
#define ct_set_error_handler(...) CT_AT(ct_set_error_handler(__VA_ARGS__))
/* Prints the message and the call site of the failing call, then aborts. */
void ct_abort_on_error(const char *message, const char *file, int line);
#define ct_abort_on_error(message, file, line) CT_AT(ct_abort_on_error(message, file, line))
/* Reports an error from user code run by ctorch, with a printf-style message: a
 * Dataset's get(), a collate function, a custom module's forward, a LambdaLR
 * function, a custom autograd function.  It sets the message ct_last_error() returns
 * and calls the installed handler (the call site is the ct_set_error line), exactly
 * as ctorch's own errors do; the callback then returns its failure value (-1, NULL).
 * An error set in a DataLoader worker reaches the thread calling ct_loader_next,
 * which returns false with the message (plus the worker and batch) and calls the
 * handler there.
 *
 *     static int my_get(ct_dataset *ds, int64_t i, ct_sample *out) {
 *         (void)ds;
 *         if (i == 3) {
 *             ct_set_error("my_get: sample %lld is corrupt", (long long)i);
 *             return -1;
 *         }
 *         out->n = 1;
 *         out->t[0] = ct_full(CT_SHAPE(2), (double)i);
 *         return 0;
 *     }
 *     static int64_t my_len(const ct_dataset *ds) { (void)ds; return 8; }
 *     static const ct_dataset_class MY = {.name = "My", .len = my_len, .get = my_get};
 *     ct_set_error_handler(NULL); // report, don't abort
 *     ct_loader *l = ct_dataloader(ct_dataset_new(&MY, 0), .batch_size = 2, .num_workers = 2);
 *     ct_batch batch;
 *     while (ct_loader_next(l, &batch)) {}
 *     // ct_last_error(): "my_get: sample 3 is corrupt (in loader worker 1, batch 1)"
 */
void ct_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define ct_set_error(...) CT_AT(ct_set_error(__VA_ARGS__))

/* Warnings (PyTorch's warnings.warn): messages about a call that succeeded but may not
 * do what was meant (ct_trace of a module in train mode, ...).  The handler gets each
 * one; the default prints "ctorch: warning: <message>" on stderr.  NULL restores it. */
typedef void (*ct_warning_handler)(const char *message);
ct_warning_handler ct_set_warning_handler(ct_warning_handler h); /* returns the old one */
#define ct_set_warning_handler(h) CT_AT(ct_set_warning_handler(h))

/* Call sites: every public function is wrapped by a macro of its name that records
 * __FILE__/__LINE__ of the caller (for error handlers and anomaly mode); a new
 * function gets one too (tests/call_sites/check_wrappers.awk checks the headers).
 * Library internals call the functions directly; (ct_add)(a, b) does the same in
 * user code, and a definition or a function pointer uses the plain name. */
void ct__site(const char *file, int line);
#ifdef CT_BUILDING_LIBRARY
#define CT_AT(call) (call) /* inside the library the user's call site stays */
#else
#define CT_AT(call) (ct__site(__FILE__, __LINE__), call) /* records the caller's file:line, then calls */
#endif

/* ---- dtypes ----------------------------------------------------------- */

/* 0 means "not given" in option structs (then the default dtype, or the input's). */
typedef enum {
    CT_DTYPE_UNSET = 0,
    CT_F32, CT_F64, CT_F16, CT_BF16, CT_I64, CT_I32, CT_I16, CT_U8, CT_I8, CT_BOOL,
    CT_NUM_DTYPES
} ct_dtype;

size_t ct_dtype_size(ct_dtype t);      /* bytes per element: 4 for float32 */
#define ct_dtype_size(...) CT_AT(ct_dtype_size(__VA_ARGS__))
const char *ct_dtype_name(ct_dtype t); /* "float32", "int64", ... */
#define ct_dtype_name(...) CT_AT(ct_dtype_name(__VA_ARGS__))
bool ct_dtype_is_floating(ct_dtype t); /* float32, float64, float16, bfloat16 */
#define ct_dtype_is_floating(...) CT_AT(ct_dtype_is_floating(__VA_ARGS__))
bool ct_dtype_is_integral(ct_dtype t); /* includes bool */
#define ct_dtype_is_integral(...) CT_AT(ct_dtype_is_integral(__VA_ARGS__))
ct_dtype ct_promote_types(ct_dtype a, ct_dtype b); /* torch.promote_types */
#define ct_promote_types(...) CT_AT(ct_promote_types(__VA_ARGS__))
int ct_set_default_dtype(ct_dtype t);               /* float32 or float64; 0 or -1 */
#define ct_set_default_dtype(...) CT_AT(ct_set_default_dtype(__VA_ARGS__))
ct_dtype ct_get_default_dtype(void);                /* torch.get_default_dtype() */
#define ct_get_default_dtype(...) CT_AT(ct_get_default_dtype(__VA_ARGS__))

/* ---- devices ---------------------------------------------------------- */

/* type 0 means "not given" in option structs. */
typedef enum {
    CT_DEV_UNSET = 0,
    CT_DEV_CPU,
    CT_DEV_CUDA,
    CT_DEV_META, /* shapes, dtypes and strides without memory (ctorch/tensor.h, "meta") */
    CT_NUM_DEVICE_TYPES
} ct_device_type;
/* A device, as torch.device: a type and an index. */
typedef struct {
    int8_t type;  /* a ct_device_type */
    int8_t index; /* which device of that type (cuda:1); 0 for cpu and meta */
} ct_device;
#define CT_CPU ((ct_device){CT_DEV_CPU, 0})          /* torch.device("cpu") */
#define CT_CUDA(i) ((ct_device){CT_DEV_CUDA, (i)})   /* torch.device("cuda", i) */
#define CT_META ((ct_device){CT_DEV_META, 0})        /* torch.device("meta") */
bool ct_device_eq(ct_device a, ct_device b);         /* the same type and index */
#define ct_device_eq(...) CT_AT(ct_device_eq(__VA_ARGS__))
const char *ct_device_str(ct_device d, char buf[16]); /* "cpu", "cuda:0", "meta" */
#define ct_device_str(...) CT_AT(ct_device_str(__VA_ARGS__))

/* ---- shapes ----------------------------------------------------------- */

#define CT_MAX_DIMS 12 /* the most dims a tensor may have */
/* A shape by value (CT_SHAPE builds one). */
typedef struct {
    int ndim;                /* number of dims; 0 for a scalar */
    int64_t d[CT_MAX_DIMS]; /* the sizes */
} ct_shape;
/* CT_SHAPE(2, 3) — a shape by value; CT_SHAPE() is the 0-d (scalar) shape. */
#define CT_SHAPE(...)                                                              \
    ((ct_shape){.ndim = (int)(sizeof((int64_t[]){0, __VA_ARGS__}) / sizeof(int64_t)) - 1, \
                .d = {__VA_ARGS__}})
/* A list of dims, as for ct_sum(t, .dims = CT_DIMS(0, 2)). */
typedef struct {
    int n;                   /* how many dims; 0: none given */
    int64_t d[CT_MAX_DIMS]; /* the dims, negative ones counting from the end */
} ct_dims;
/* CT_DIMS(0, 2): a list of dims by value; CT_DIMS() is the empty list. */
#define CT_DIMS(...)                                                               \
    ((ct_dims){.n = (int)(sizeof((int64_t[]){0, __VA_ARGS__}) / sizeof(int64_t)) - 1, \
               .d = {__VA_ARGS__}})

/* Scalars keep their kind so that `t * 2` stays integer and `t * 2.5` floats, as in
 * PyTorch's promotion rules for Python numbers. */
typedef struct {
    double f;      /* the value as a double */
    int64_t i;     /* the value as an integer when is_int, else 0 */
    int8_t is_int; /* an int (Python's 2) rather than a float (2.0) */
} ct_scalar;
#define CT_INT(v) ((ct_scalar){.f = (double)(v), .i = (int64_t)(v), .is_int = 1})   /* an integer scalar */
#define CT_FLOAT(v) ((ct_scalar){.f = (double)(v), .i = 0, .is_int = 0}) /* a float scalar (NaN and inf too) */

/* ---- the options convention ------------------------------------------ */

/* Every call with options takes them as designated initializers behind its macro,
 * with PyTorch's names:
 *
 *     ct_leaky_relu(x);                           // F.leaky_relu(x), slope 0.01
 *     ct_leaky_relu(x, .negative_slope = CT_SOME(0.2));
 *     ct_var(t, .dims = CT_DIMS(1), .correction = CT_SOME(0));  // unbiased=False
 *     ct_module *act = ct_nn_leaky_relu(.negative_slope = CT_SOME(0.2));  // same struct
 *
 * - An option not written takes PyTorch's default.
 * - Zero means PyTorch's default: the function reads a zero field as the default, so
 *   the `_with` form given `(ct_x_options){0}` is the macro given nothing.
 * - Where zero is itself a value one may ask for and not the default (var's
 *   correction, embedding's padding_idx, clamp's bounds, addmm's beta and alpha,
 *   hardtanh's bounds, batch norm's momentum, a per-group lr, leaky_relu's slope,
 *   elu's alpha, softplus's beta and threshold, Adam's betas, ignore_index, smooth_l1's
 *   beta, Flatten's dims ...) the field is a ct_opt_f64 written CT_SOME(v); left out it
 *   is PyTorch's default (or None).  A learning rate, an eps, a size or a factor that
 *   0 would make meaningless (lr, eps, dim_feedforward, div_factor, huber's delta)
 *   stays a plain number whose 0 is the default.
 *   CT_NONE is an explicit None where PyTorch's default is not None (BatchNorm's
 *   momentum=None).  Integer options held in a ct_opt_f64 must be integral.
 * - A layer's functional and module forms share one options struct (F.leaky_relu
 *   and nn.LeakyReLU: ct_leaky_relu_options); each layer has its own struct.
 * - A bool whose PyTorch default is True (bias, affine, train, shuffle,
 *   count_include_pad ...) keeps PyTorch's name; the macro sets it true (CT_DEFAULTS
 *   below, used for these bools only), so `.bias = false` reads as in Python.  Called
 *   through `_with`, such a bool is given explicitly.
 *
 * Return conventions, on failure (ct_last_error() then holds the message and the
 * error handler has been called with the user's file:line):
 * - a function returning an object (tensor, module, optimizer, ...) returns NULL;
 *   one returning a pair of tensors returns both NULL;
 * - a function that acts (an in-place op, ct_backward, ct_step, a save or load)
 *   returns int: 0 on success, -1 on failure;
 * - a question or an iterator (ct_loader_next, ct_is_contiguous ...) returns bool:
 *   false on failure too, which ct_last_error() tells apart;
 * - a function returning a number (ct_item, ct_optim_get_lr, ct_clip_grad_norm_ ...)
 *   returns NaN; a size or count (ct_numel, ct_size, ct_dataset_len ...) returns -1;
 *   an integer value with no spare value (ct_item_int) returns 0, and
 *   ct_last_error() tells;
 * - an enum or struct accessor given NULL returns its zero (ct_dtype_of: CT_DTYPE_UNSET);
 * - functions returning void cannot fail (a NULL object makes them do nothing).
 * Every public function is wrapped by a macro of its name that records the call
 * site (CT_AT below), so the handler prints the caller's file:line. */

/* An optional number: zero-initialised means "not given" (PyTorch's default). */
typedef struct {
    bool set;  /* given (CT_SOME or CT_NONE) */
    bool none; /* given as None (CT_NONE) */
    double v;  /* the value, when set and not none */
} ct_opt_f64;
#define CT_SOME(value) ((ct_opt_f64){.set = true, .v = (double)(value)}) /* an option given as value */
#define CT_NONE ((ct_opt_f64){.set = true, .none = true})                /* an option given as None */

/* CT_OPTIONS(T, opts...): the options struct T from designated initializers, zero for
 * the rest.  A plain number given to a ct_opt_f64 field (`.lr = 0.01` instead of
 * `.lr = CT_SOME(0.01)`) would fill its first member by brace elision and be silently
 * wrong, so a missing brace is an error here (a GNU statement expression scopes it). */
#define CT_OPTIONS(T, ...)                                                              \
    ({                                                                                 \
        _Pragma("GCC diagnostic push")                                                 \
        _Pragma("GCC diagnostic error \"-Wmissing-braces\"")                           \
        T ct_opts_ = {__VA_ARGS__};                                                    \
        _Pragma("GCC diagnostic pop") ct_opts_;                                        \
    })

/* CT_ARG_OPTS_(T, x, opts..., ) -> x, CT_OPTIONS(T, opts...): one argument, then options. */
#define CT_ARG_OPTS_(T, x, ...) x, CT_OPTIONS(T, __VA_ARGS__)

/* Options with defaults the macro fills in (bools whose PyTorch default is True, and
 * nothing else: every other default is the implementation's, read from a zero field):
 * CT_DEFAULTS(type, defaults..., user values...) builds the struct with the user's
 * designated initializers overriding the defaults (a GNU statement expression; the
 * override warning is silenced for this use). */
#define CT_DEFAULTS(T, ...)                                                            \
    ({                                                                                 \
        _Pragma("GCC diagnostic push")                                                 \
        _Pragma("GCC diagnostic ignored \"-Woverride-init\"")                          \
        _Pragma("GCC diagnostic error \"-Wmissing-braces\"")                           \
        T ct_defaults_ = {__VA_ARGS__};                                                \
        _Pragma("GCC diagnostic pop") ct_defaults_;                                    \
    })

/* ---- two results ----------------------------------------------------- */

#ifndef CT_VALUES_INDICES_DEFINED
#define CT_VALUES_INDICES_DEFINED
/* Ops returning values and int64 indices (sort, topk, max(dim), ...), like
 * torch.return_types; both NULL on error. */
typedef struct {
    struct ct_tensor *values;  /* the values */
    struct ct_tensor *indices; /* their int64 indices */
} ct_values_indices;
#endif

/* ---- threads ---------------------------------------------------------- */

void ct_set_num_threads(int n); /* intra-op threads; results are identical for any n */
#define ct_set_num_threads(n) CT_AT(ct_set_num_threads(n))
int ct_get_num_threads(void);   /* the intra-op thread count */
/* The instruction set the cpu kernels use, as torch.backends.cpu.get_cpu_capability():
 * "avx512", "avx2" or "default" — the best this CPU has, or a lower one forced with
 * the environment variable CT_CPU_CAPABILITY (read once, at the first op). */
const char *ct_cpu_capability(void);
#define ct_cpu_capability(...) CT_AT(ct_cpu_capability(__VA_ARGS__))
#define ct_get_num_threads(...) CT_AT(ct_get_num_threads(__VA_ARGS__))

#ifdef __cplusplus
}
#endif
CT_API_END
#endif
