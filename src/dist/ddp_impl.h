/* DistributedDataParallel's internals (src/dist/ddp*.c): the wrapper's state, its
 * parameters and buckets.
 *
 *   ddp.c          the module "DistributedDataParallel" and the public functions
 *   ddp_sync.c     construction's check that every rank has the same model, and the
 *                  broadcasts of rank 0's parameters and buffers
 *   ddp_reducer.c  buckets, the gradient hooks, the asynchronous all-reduces and the
 *                  end of a synchronised backward
 *   ddp_unused.c   find_unused_parameters: the parameters the forward's graph reaches
 *
 * Note [The reducer]: it follows PyTorch's (torch/csrc/distributed/c10d/reducer.cpp).
 * The parameters that require grad, in reverse registration order (roughly the order
 * backward produces their gradients), are packed into buckets, one flat buffer each
 * (one dtype per bucket; the first capped at 1 MiB so that communication starts
 * early, the others at bucket_cap_mb).  A forward in training mode with grad enabled
 * prepares a backward; each parameter's post-accumulate-grad hook copies its .grad
 * into its slot, and a bucket whose slots are all filled is all-reduced
 * asynchronously, buckets strictly in index order (MPI matches collectives by order,
 * so every rank starts them in the same order whatever order the hooks ran in).
 * When the last bucket has started, a callback queued to the end of the backward
 * waits for them all, scales by 1/world and copies the results back into the .grads.
 * A backward that leaves a bucket incomplete (a parameter got no gradient) makes the
 * next forward fail with PyTorch's error, unless find_unused_parameters: then the
 * forward walks the graph from its outputs and the parameters it does not reach are
 * filled in (their .grad, or zeros) at the backward's first hook; a parameter that no
 * rank gave a gradient keeps its .grad. */
#ifndef CT_DIST_DDP_IMPL_H
#define CT_DIST_DDP_IMPL_H

#include "ctorch.h"
#include "ctorch/distributed.h"

#define CT_DDP_MAGIC 0x44445031u /* "DDP1": the module's state is a ddp_state */

typedef struct ddp_state ddp_state;

/* A parameter the reducer averages (one that requires grad). */
typedef struct {
    ddp_state *ddp;
    ct_tensor *param; /* borrowed: the model owns it */
    char *name;       /* its dotted name in the model */
    int bucket;
    ct_tensor *slot; /* owned: its part of the bucket's buffer, shaped like it */
    int hook;        /* its post-accumulate-grad hook */
    bool ready;      /* its slot is filled in this backward */
    bool has_grad;   /* ... with a gradient (else zeros: it got none on this rank) */
    bool reached;    /* find_unused_parameters: the forward's outputs depend on it */
} ddp_param;

typedef struct {
    ct_tensor *flat; /* owned: the slots of its parameters, contiguous */
    int size;        /* how many parameters */
    int pending;     /* of which not ready yet in this backward */
    ct_work *work;   /* its all-reduce, while running */
} ddp_bucket;

struct ddp_state {
    unsigned magic;
    ct_module *model; /* borrowed: the child "module" */
    ct_process_group *group;
    int rank, world;
    bool broadcast_buffers, find_unused;
    ddp_param *params; /* in registration order (PyTorch's parameter indices) */
    int n_params;
    ddp_bucket *buckets;
    int n_buckets;
    int next_bucket;       /* the next bucket to start */
    bool expect_hooks;     /* a forward prepared the next backward */
    bool require_finalize; /* a slot was filled since the last finished reduction */
    bool marked_unused;    /* the unreached parameters are filled in this backward */
    bool no_sync;
    double t_prepared; /* when the forward prepared the backward */
    ct_ddp_stats stats;
};

/* The options of a collective over the wrapper's group. */
static inline ct_dist_options ct_ddp_group_options(const ddp_state *s) {
    return (ct_dist_options){.group = s->group};
}

/* Seconds on the monotonic clock. */
double ct_ddp_now(void);

/* A growing string (the descriptions and error lists). */
typedef struct {
    char *text;
    size_t len, cap;
} ct_ddp_strbuf;
/* Appends printf-style; false with an error when out of memory. */
bool ct_ddp_append(ct_ddp_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ddp_sync.c.  Every rank's n parameters and nb buffers (names[], ts[]: parameters
 * first) against rank 0's: 0, or -1 with the same error on every rank. */
int ct_ddp_check_models(const ddp_state *s, int n, int nb, const char **names, ct_tensor **ts);
/* Rank 0's values of ts into every rank's, one broadcast per dtype. */
int ct_ddp_broadcast_from_rank0(const ddp_state *s, int n, ct_tensor **ts);
/* .broadcast_buffers: rank 0's buffers of the model into every rank's. */
int ct_ddp_sync_buffers(const ddp_state *s);

/* ddp_reducer.c.  Buckets the n_params parameters; false with an error. */
bool ct_ddp_assign_buckets(ddp_state *s, double cap_mb);
/* The post-accumulate-grad hook of every reduced parameter (ctx: its ddp_param). */
void ct_ddp_grad_ready(ct_tensor *leaf, void *ctx);
/* Reducer::prepare_for_backward: the next backward synchronises (out: the forward's
 * outputs, searched with find_unused_parameters). */
bool ct_ddp_prepare_backward(ddp_state *s, int n_out, ct_tensor *const *out);
/* Reducer::ensure_prior_reduction_finished's error. */
void ct_ddp_report_unfinished(const ddp_state *s);
/* Waits for the buckets' all-reduces and frees their work (after an error too),
 * adding the time blocked to *waited. */
int ct_ddp_wait_buckets(ddp_state *s, double *waited);

/* ddp_unused.c.  Sets each parameter's reached: whether the graph of the outputs leads
 * to its AccumulateGrad node. */
bool ct_ddp_search_unused(ddp_state *s, int n_out, ct_tensor *const *out);

#endif
