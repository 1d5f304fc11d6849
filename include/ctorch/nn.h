/* ctorch/nn.h — modules: parameters, buffers, children, forward, train/eval.
 *
 * A module is a reference-counted object with a class (its forward and its name),
 * named parameters, buffers and child modules registered in order, and a block of
 * state for the class's own fields.  Names, nesting and state-dict keys follow
 * PyTorch ("fc1.weight", "features.0.bias").  A custom module:
 *
 *     #include "ctorch.h"
 *     typedef struct { ct_module *fc1, *fc2; } mlp;
 *     static ct_tensor *mlp_forward(ct_module *m, ct_tensor *x) {
 *         mlp *s = ct_module_state(m);
 *         return ct_forward(s->fc2, ct_relu(ct_forward(s->fc1, x)));
 *     }
 *     static const ct_module_class MLP = {.name = "MLP", .forward = mlp_forward};
 *     static ct_module *mlp_new(void) {
 *         ct_module *m = ct_module_new(&MLP, sizeof(mlp));
 *         mlp *s = ct_module_state(m);
 *         s->fc1 = ct_module_add(m, "fc1", ct_nn_linear(784, 128));
 *         s->fc2 = ct_module_add(m, "fc2", ct_nn_linear(128, 10));
 *         return m;
 *     }
 *     int main(void) {
 *         CT_SCOPE {
 *             ct_module *net = mlp_new();
 *             ct_tensor *y = ct_forward(net, ct_randn(CT_SHAPE(32, 784)));  // [32, 10]
 *             if (!y || ct_module_num_parameters(net, true) != 101770) return 1;
 *         }
 *         return 0;
 *     }
 *
 * Registration adopts the reference the caller got from the constructor, whether
 * that reference is owned by a scope or by the caller: the parent owns the child from
 * then on (ct_retain first to keep one of your own).
 *
 * The classic mistake: a parameter (or a child module) kept only in a C array or a
 * struct field of the state, without ct_module_add_parameter / ct_module_add, is
 * invisible to the module: it is never returned by ct_parameters, so never trained by
 * an optimizer, never moved by ct_module_to, never saved in the state dict.  Register
 * everything; keep the returned pointer in the state for use in forward; use a
 * ct_module_list / ct_parameter_list for variable numbers of them.
 */
#ifndef CTORCH_NN_H
#define CTORCH_NN_H

#include "tensor.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_module ct_module; /* a module (nn.Module): its class, state, parameters, children */

/* A module class: what a subclass of nn.Module defines. */
typedef struct ct_module_class {
    const char *name; /* shown by printing: "Linear" */
    /* The forward of a one-input, one-output module. */
    ct_tensor *(*forward)(ct_module *self, ct_tensor *x);
    /* The forward of modules with several inputs or outputs (LSTM, attention):
     * writes up to max_out outputs, returns how many (or -1 on error). */
    int (*forward_multi)(ct_module *self, int n_in, ct_tensor *const *in, ct_tensor **out,
                         int max_out);
    /* Writes the part of the repr between the parentheses ("in_features=1, ..."). */
    void (*extra_repr)(const ct_module *self, char *buf, size_t size);
    /* Frees what the class allocated in its state (registered objects are released
     * by the base). */
    void (*destroy)(ct_module *self);
} ct_module_class;

/* A new module of class cls with state_size zeroed bytes of state. */
ct_module *ct_module_new(const ct_module_class *cls, size_t state_size);
#define ct_module_new(cls, state_size) CT_AT(ct_module_new(cls, state_size))
void *ct_module_state(const ct_module *m); /* the class's state (state_size bytes) */
#define ct_module_state(m) CT_AT(ct_module_state(m))
const char *ct_module_type(const ct_module *m); /* the class name */
#define ct_module_type(m) CT_AT(ct_module_type(m))

/* Registration (names must be unique within the module and contain no '.'; a child
 * must not contain m). */
ct_module *ct_module_add(ct_module *m, const char *name, ct_module *child);
#define ct_module_add(m, name, child) CT_AT(ct_module_add(m, name, child))
/* Makes p a parameter (requires_grad set); returns p. */
ct_tensor *ct_module_add_parameter(ct_module *m, const char *name, ct_tensor *p);
#define ct_module_add_parameter(m, name, p) CT_AT(ct_module_add_parameter(m, name, p))
/* Buffers: state that is saved but not trained (running_mean); non-persistent ones
 * are left out of the state dict. */
ct_tensor *ct_module_add_buffer(ct_module *m, const char *name, ct_tensor *b, bool persistent);
#define ct_module_add_buffer(m, name, b, persistent) \
    CT_AT(ct_module_add_buffer(m, name, b, persistent))
/* Looks up by dotted name ("features.0.weight"); NULL (no error) when absent. */
ct_tensor *ct_module_get_parameter(const ct_module *m, const char *name);
#define ct_module_get_parameter(m, name) CT_AT(ct_module_get_parameter(m, name))
ct_tensor *ct_module_get_buffer(const ct_module *m, const char *name);
#define ct_module_get_buffer(m, name) CT_AT(ct_module_get_buffer(m, name))
ct_module *ct_module_get_submodule(const ct_module *m, const char *name);
#define ct_module_get_submodule(m, name) CT_AT(ct_module_get_submodule(m, name))
/* Replaces a registered parameter/buffer tensor (same dotted name) — for init and
 * loading; retains t (the caller keeps its reference).  Fields of the owner's state
 * that held the old tensor are re-pointed, as ct_module_set does.  0 or -1. */
int ct_module_set_tensor(ct_module *m, const char *name, ct_tensor *t);
#define ct_module_set_tensor(m, name, t) CT_AT(ct_module_set_tensor(m, name, t))
/* Replaces the registered child at a dotted path, as `model.fc = nn.Linear(512, 5)`
 * or `model.layer4[1].conv2 = ...` does (Sequential/ModuleList entries are "0", "1",
 * ...).  The new child takes the old one's place in the registration order (so in
 * ct_named_parameters, the state dict, printing, a Sequential's forward, train/eval
 * and ct_module_to), and the old child is released.  Fields of the owner's state
 * that held the old child (s->fc = ct_module_add(...)) are re-pointed to the new one;
 * pointers kept anywhere else (malloc'd arrays, another module's state) are not, so
 * look such children up by name.  Adopts the caller's reference as ct_module_add does
 * (setting a child to itself changes nothing).  Returns child, or NULL with an error
 * leaving m unchanged: a missing path component, a name that is a parameter or buffer
 * (ct_module_set_tensor replaces those), no child of that name (ct_module_add
 * registers new ones), a cycle.  Transfer learning:
 *
 *     ct_module *model = ct_sequential(CT_MODULES(ct_nn_linear(8, 16), ct_nn_relu(),
 *                                                  ct_nn_linear(16, 10)));
 *     ct_module_requires_grad_(model, false);              // freeze the backbone
 *     ct_module_set(model, "2", ct_nn_linear(16, 5));      // model[2] = nn.Linear(16, 5)
 *     ct_tensor *head[2];
 *     int n = ct_parameters(ct_module_get_submodule(model, "2"), head, 2);
 *     ct_optim *opt = ct_sgd(head, n, .lr = CT_SOME(0.1));          // only the new head trains
 *     (void)opt;
 */
ct_module *ct_module_set(ct_module *m, const char *path, ct_module *child);
#define ct_module_set(m, path, child) CT_AT(ct_module_set(m, path, child))

/* ---- calling ----------------------------------------------------------- */

/* The module's __call__: forward pre-hooks, forward, forward hooks. */
ct_tensor *ct_forward(ct_module *m, ct_tensor *x);
int ct_forward_multi(ct_module *m, int n_in, ct_tensor *const *in, ct_tensor **out, int max_out);
#define ct_forward(m, x) CT_AT(ct_forward(m, x))
#define ct_forward_multi(m, n_in, in, out, max_out) CT_AT(ct_forward_multi(m, n_in, in, out, max_out))

/* A pre-hook may replace the input (return a tensor) or keep it (return NULL); a
 * forward hook may replace the output likewise; a hook that calls ct_set_error fails
 * the call (NULL / -1).  For ct_forward_multi they see the first input and the first
 * output.  Return a handle for removal. */
typedef ct_tensor *(*ct_forward_pre_hook)(ct_module *m, ct_tensor *input, void *ctx);
/* A forward hook: sees the input and the output, and may replace the output. */
typedef ct_tensor *(*ct_forward_hook)(ct_module *m, ct_tensor *input, ct_tensor *output, void *ctx);
/* register_forward_pre_hook / register_forward_hook: fn(m, ..., ctx) runs at each
 * call; returns a handle for ct_module_remove_hook, or -1. */
int ct_module_register_forward_pre_hook(ct_module *m, ct_forward_pre_hook fn, void *ctx);
#define ct_module_register_forward_pre_hook(...) CT_AT(ct_module_register_forward_pre_hook(__VA_ARGS__))
int ct_module_register_forward_hook(ct_module *m, ct_forward_hook fn, void *ctx);
#define ct_module_register_forward_hook(...) CT_AT(ct_module_register_forward_hook(__VA_ARGS__))
int ct_module_remove_hook(ct_module *m, int handle); /* handle.remove(); 0 or -1 */
#define ct_module_remove_hook(m, handle) CT_AT(ct_module_remove_hook(m, handle))

/* ---- iteration (PyTorch's order: own entries, then children, depth first) ---- */

/* Each fills up to max entries of out (names: dotted, owned by the module, valid until
 * a registration changes its sub-tree; either array may be NULL) and returns the total
 * count; call with max = 0 to count.  Shared tensors are listed once, as in PyTorch. */
int ct_parameters(ct_module *m, ct_tensor **out, int max);
#define ct_parameters(m, out, max) CT_AT(ct_parameters(m, out, max))
int ct_named_parameters(ct_module *m, const char **names, ct_tensor **out, int max);
#define ct_named_parameters(m, names, out, max) CT_AT(ct_named_parameters(m, names, out, max))
int ct_buffers(ct_module *m, ct_tensor **out, int max);
#define ct_buffers(m, out, max) CT_AT(ct_buffers(m, out, max))
int ct_named_buffers(ct_module *m, const char **names, ct_tensor **out, int max);
#define ct_named_buffers(m, names, out, max) CT_AT(ct_named_buffers(m, names, out, max))
/* Direct children, and all modules (self first, named "" ) depth first. */
int ct_named_children(ct_module *m, const char **names, ct_module **out, int max);
#define ct_named_children(m, names, out, max) CT_AT(ct_named_children(m, names, out, max))
int ct_named_modules(ct_module *m, const char **names, ct_module **out, int max);
#define ct_named_modules(m, names, out, max) CT_AT(ct_named_modules(m, names, out, max))
/* The number of parameter elements (of those requiring grad, when trainable_only). */
int64_t ct_module_num_parameters(ct_module *m, bool trainable_only);
#define ct_module_num_parameters(m, trainable_only) \
    CT_AT(ct_module_num_parameters(m, trainable_only))
/* The model's size: the bytes of its parameters and buffers (elements times element
 * size, whatever their device: on the meta device an estimate that allocates nothing). */
int64_t ct_module_num_bytes(ct_module *m);
#define ct_module_num_bytes(m) CT_AT(ct_module_num_bytes(m))

/* ---- modes and bulk operations ---------------------------------------- */

void ct_module_train(ct_module *m, bool training); /* recursive, like .train(mode) */
#define ct_module_train(m, training) CT_AT(ct_module_train(m, training))
void ct_module_eval(ct_module *m);                /* .eval() */
#define ct_module_eval(m) CT_AT(ct_module_eval(m))
bool ct_module_is_training(const ct_module *m);   /* .training */
#define ct_module_is_training(m) CT_AT(ct_module_is_training(m))
/* requires_grad_(flag) on every parameter of the sub-tree (freezing). */
void ct_module_requires_grad_(ct_module *m, bool requires_grad);
#define ct_module_requires_grad_(m, requires_grad) CT_AT(ct_module_requires_grad_(m, requires_grad))
/* Options of ct_module_zero_grad. */
typedef struct {
    bool set_to_none; /* PyTorch 1.13's default is False: zero the grads in place */
} ct_zero_grad_options;
void ct_module_zero_grad_with(ct_module *m, ct_zero_grad_options o);
#define ct_module_zero_grad_with(...) CT_AT(ct_module_zero_grad_with(__VA_ARGS__))
#define ct_module_zero_grad(m, ...) ct_module_zero_grad_with(m, CT_OPTIONS(ct_zero_grad_options, __VA_ARGS__))
/* fn on every submodule, children first, then m itself (Module.apply). */
void ct_module_apply(ct_module *m, void (*fn)(ct_module *m, void *ctx), void *ctx);
#define ct_module_apply(...) CT_AT(ct_module_apply(__VA_ARGS__))
/* Moves / converts parameters and buffers in place (the tensor objects stay the same,
 * so optimizers holding them keep working).  Floating dtypes only change floating
 * tensors, as in PyTorch.  Returns 0 or -1. */
typedef struct {
    ct_dtype dtype;   /* unset: keep */
    ct_device device; /* unset: keep */
} ct_module_to_options;
int ct_module_to_with(ct_module *m, ct_module_to_options o);
#define ct_module_to_with(...) CT_AT(ct_module_to_with(__VA_ARGS__))
#define ct_module_to(m, ...) ct_module_to_with(m, CT_OPTIONS(ct_module_to_options, __VA_ARGS__))

/* ---- printing ------------------------------------------------------------ */

/* PyTorch's repr ("Net(\n  (fc1): Linear(in_features=784, ...)\n)"); malloc'd. */
char *ct_module_to_string(const ct_module *m);
#define ct_module_to_string(m) CT_AT(ct_module_to_string(m))
/* The repr followed by the parameter count. */
void ct_module_print(ct_module *m);
#define ct_module_print(m) CT_AT(ct_module_print(m))

#ifdef __cplusplus
}
#endif
CT_API_END
#endif
