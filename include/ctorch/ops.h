/* ctorch/ops.h — ops as data: each op's schema, and the record hook that sees every
 * op call (the base of tracing, export and profiling).
 *
 *     const ct_schema *s = ct_op_schema_find("add");
 *     printf("%s: %s\n", s->signature, s->grad_fn);
 *     // add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor: AddBackward0
 *     printf("%s=%s\n", s->attrs[0].name, s->attrs[0].default_value);   // alpha=1
 *
 *     ct_trace_printer *p = ct_trace_print_begin(stdout);  // this thread's op calls
 *     ct_relu(x);                // %1: float32[3] = relu(%0)
 *     ct_trace_print_end(p);
 *
 * Schemas are written in PyTorch's schema language (native_functions.yaml's `func:`
 * lines) in src/ops/schema.def, one row per op of the op table: PyTorch's argument
 * names, types, order and defaults, for the arguments ctorch implements.  Arguments of
 * type Tensor, Tensor? and Tensor[] are the op's inputs; all others its attributes.
 */
#ifndef CTORCH_OPS_H
#define CTORCH_OPS_H

#include <stdio.h>

#include "tensor.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

/* ---- schemas ------------------------------------------------------------ */

/* The type of a schema argument (PyTorch's spelling in the comments). */
typedef enum {
    CT_ARG_TENSOR,      /* Tensor, Tensor? */
    CT_ARG_TENSOR_LIST, /* Tensor[], Tensor?[] */
    CT_ARG_INT,         /* int, SymInt */
    CT_ARG_INT_LIST,    /* int[], int[2], SymInt[] */
    CT_ARG_FLOAT,       /* float */
    CT_ARG_FLOAT_LIST,  /* float[] */
    CT_ARG_BOOL,        /* bool */
    CT_ARG_SCALAR,      /* Scalar: a number */
    CT_ARG_DTYPE,       /* ScalarType */
    CT_ARG_STR,         /* str */
    CT_ARG_DEVICE,      /* Device */
    CT_ARG_GENERATOR,   /* Generator */
    CT_ARG_BOOL_LIST,   /* bool[], bool[3] */
} ct_arg_type;

/* One argument of a schema (an input, attribute or output). */
typedef struct {
    const char *name;          /* "alpha"; outputs may have none: "" */
    const char *type;          /* as written: "Scalar", "int[1]?", "Tensor(a!)" */
    ct_arg_type kind;          /* the type, parsed */
    bool optional;             /* T?: may be None */
    int list_len;              /* int[2]: 2; 0 for other lists and non-lists */
    const char *default_value; /* as written: "1", "None", "[]", "'none'"; NULL: none */
    bool kwarg_only;           /* after `*` */
    bool is_mutable;           /* Tensor(a!): written in place */
} ct_schema_arg;

/* An op's schema, as PyTorch's native_functions.yaml writes it. */
typedef struct {
    int op;                /* index in [0, ct_num_ops()) */
    const char *name;      /* ctorch's op name: "add", "max_pool2d" */
    const char *aten_name; /* PyTorch's name and overload: "add.Tensor" */
    const char *signature; /* the whole schema text */
    const char *grad_fn;   /* "AddBackward0"; NULL when not differentiable */
    int n_inputs;          /* tensor arguments */
    int n_attrs;           /* other arguments (numbers, lists, dtypes, ...) */
    int n_outputs;         /* results */
    const ct_schema_arg *inputs;  /* n_inputs of them */
    const ct_schema_arg *attrs;   /* n_attrs of them */
    const ct_schema_arg *outputs; /* n_outputs of them */
} ct_schema;

/* The number of ops in the op table. */
int ct_num_ops(void);
#define ct_num_ops(...) CT_AT(ct_num_ops(__VA_ARGS__))
/* The schema of op 0 <= op < ct_num_ops() (static storage); NULL with an error otherwise. */
const ct_schema *ct_op_schema(int op);
#define ct_op_schema(op) CT_AT(ct_op_schema(op))
/* The schema of the op named name ("add"); NULL with an error when there is none. */
const ct_schema *ct_op_schema_find(const char *name);
#define ct_op_schema_find(name) CT_AT(ct_op_schema_find(name))

/* ---- the record hook ------------------------------------------------------ */

/* An attribute's value as an op call passed it (kind follows the schema's). */
typedef struct {
    ct_arg_type kind; /* which member of the union holds the value */
    bool none; /* an optional attribute given as None */
    union {
        int64_t i;          /* INT */
        double f;           /* FLOAT, SCALAR */
        bool b;             /* BOOL */
        ct_dtype dtype;     /* DTYPE */
        const char *s;      /* STR */
        ct_device device;   /* DEVICE */
        struct { int n; const int64_t *v; } ints;  /* INT_LIST */
        struct { int n; const double *v; } floats; /* FLOAT_LIST */
        struct { int n; const bool *v; } bools;    /* BOOL_LIST */
    };
} ct_value;

/* One op call.  inputs are the tensors of the schema's inputs in order (a Tensor[]
 * argument contributes each of its tensors; an absent Tensor? is NULL); outputs the
 * results; attrs one value per schema attribute, in the schema's order.  Everything is
 * borrowed for the duration of the hook. */
typedef struct {
    const ct_schema *schema;   /* the op */
    int n_inputs;              /* input tensors */
    int n_outputs;             /* output tensors */
    ct_tensor *const *inputs;  /* n_inputs of them */
    ct_tensor *const *outputs; /* n_outputs of them */
    const ct_value *attrs;  /* schema->n_attrs values */
    bool in_backward;       /* run by the autograd engine (a backward formula's op) */
} ct_op_call;

typedef void (*ct_trace_fn)(const ct_op_call *call, void *ctx); /* a record hook */

/* Pushes fn on this thread's hook stack: every op call this thread makes then reaches
 * every hook on the stack, innermost first — with or without grad mode, differentiable
 * or not, forward or backward.  Ops another thread runs (DataLoader workers) are not
 * seen.  Returns 0, or -1 with an error when the stack (8 deep) is full.
 *
 * What is reported: each call of an op of the table, once, as itself, after its
 * outputs exist; an op built of other ops (var, the losses' weighting and reduction)
 * reports itself only.  Functions that are not ops of the table (linear,
 * cross_entropy, flatten, reshape) appear as the ops they run (transpose + addmm,
 * log_softmax + nll_loss, view).  Factories that are not ops of the table (zeros, ones,
 * full, rand, randn) are not op calls: their tensors first appear as inputs.  Ops a
 * hook runs are not reported.  Autograd's own work is reported as ops of the table too:
 * - accumulate_grad(variable, new_grad), once per leaf each backward, after the leaf's
 *   .grad holds new_grad (after the tensor's hooks ran; their ops are reported);
 * - copy_slices(base, src) -> base, when a CopySlices node writes the gradient of an
 *   in-place op on a view into the base's gradient (the op's own formula is reported);
 * - custom_function(inputs, name) -> [output] and checkpoint(inputs) -> [output], once
 *   per ct_function_apply / ct_checkpoint, after forward (whose ops are the call's own
 *   and are not reported); their backward runs ops, reported as backward (a
 *   checkpoint keeps no RNG state: preserve_rng_state=False);
 * - convolution_backward, when a convolution's gradients are computed by kernels (an
 *   output not asked for by output_mask is NULL; under create_graph the gradients are
 *   ops, reported as themselves);
 * - sgd_step, adam_step, rmsprop_step and adagrad_step, once per parameter ct_step
 *   updates, with the group's hyperparameters and the parameter's step count;
 * - reduce_mask and cumprod_grad, the helpers of norm's, max's and cumprod's backward.
 * With no hook pushed, an op pays one predictable branch on a thread-local counter. */
int ct_trace_push(ct_trace_fn fn, void *ctx);
#define ct_trace_push(fn, ctx) CT_AT(ct_trace_push(fn, ctx))
/* Pops the innermost hook; -1 with an error when there is none. */
int ct_trace_pop(void);
#define ct_trace_pop(...) CT_AT(ct_trace_pop(__VA_ARGS__))

/* A printer of this thread's op calls, one line each (output, op, inputs, attributes),
 * as torch.fx's print_tabular: "%3: float32[64, 32, 28, 28] = convolution(%0, %1, %2,
 * stride=[1, 1], ...)".  Tensors are named %0, %1, ... in the order the printer first
 * meets them; one it meets first as an input gets a line "%0: float32[...] = input".
 * It keeps a reference to each until it ends, so that names stay unique.  Every
 * attribute is shown with its value; a call made by the autograd engine ends in
 * "# backward".
 * ct_trace_print_begin pushes its hook and returns it (NULL with an error);
 * ct_trace_print_end pops it (it must be the innermost hook) and frees it: 0 or -1. */
typedef struct ct_trace_printer ct_trace_printer;
ct_trace_printer *ct_trace_print_begin(FILE *f);
#define ct_trace_print_begin(f) CT_AT(ct_trace_print_begin(f))
int ct_trace_print_end(ct_trace_printer *p);
#define ct_trace_print_end(p) CT_AT(ct_trace_print_end(p))
/* Writes v as PyTorch prints it (1, 0.5, True, [1, 1], None, 'mean', torch.float32)
 * into buf (NUL-terminated, truncated to size); returns snprintf's count. */
int ct_value_format(const ct_value *v, char *buf, size_t size);
#define ct_value_format(v, buf, size) CT_AT(ct_value_format(v, buf, size))

#ifdef __cplusplus
}
#endif

CT_API_END
#endif
