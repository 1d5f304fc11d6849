/* The seam between a tensor and autograd, as PyTorch's AutogradMeta and its factory:
 * core keeps autograd's state of a tensor without calling autograd.
 *
 *     // src/autograd registers its interface at start-up:
 *     static const ct_autograd_interface iface = {"autograd", release_meta};
 *     ct_autograd_register(&iface);
 *     // core, as a tensor dies:
 *     if (t->autograd_meta) ct_autograd_release_meta(t);
 *
 * The hot autograd fields (requires_grad, grad_fn, output_nr, grad, the view state)
 * sit in the tensor itself: every recorded op sets them, and a separate block per
 * result would cost an allocation per op.  The rest (hooks, retain_grad) lives in a
 * ct_autograd_meta that autograd allocates on first use and defines; core sees it only
 * as a pointer, and hands it back through the registered interface.  Without an
 * interface registered no tensor can have one (only autograd makes them), so core
 * then has nothing to release. */
#ifndef CT_CORE_AUTOGRAD_META_H
#define CT_CORE_AUTOGRAD_META_H

#include <stdbool.h>

#include "ctorch/tensor.h"

typedef struct ct_autograd_meta ct_autograd_meta; /* defined by autograd */

/* > 0 while the autograd engine runs a node on this thread (the engine counts it; the
 * record hook and the memory history read it). */
extern _Thread_local int ct_trace_backward_depth;

typedef struct {
    const char *name;
    /* Frees t->autograd_meta (and sets it NULL), undoing what it registered elsewhere
     * (a non-leaf's hooks on its grad_fn).  Runs as t dies, before core releases t's
     * grad_fn; cannot fail. */
    void (*release_meta)(ct_tensor *t);
} ct_autograd_interface;

/* Registers autograd's interface (once per process); false with an error naming
 * ct_autograd_register when iface lacks a member or one is registered already. */
bool ct_autograd_register(const ct_autograd_interface *iface);
/* The registered interface; NULL while none is. */
const ct_autograd_interface *ct_autograd_interface_get(void);
/* Releases t->autograd_meta through the interface (a no-op when none is registered:
 * no tensor has a meta then). */
void ct_autograd_release_meta(ct_tensor *t);

#endif
