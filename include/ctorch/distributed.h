/* ctorch/distributed.h — data-parallel training over MPI: the process group, collectives
 * on tensors, DistributedDataParallel and SyncBatchNorm (torch.distributed).
 *
 * Launch with mpirun (Open MPI): `mpirun -np 2 ./train`.  Every rank runs the same
 * program:
 *
 *     ct_dist_init(.backend = CT_DIST_MPI);             // rank and world from mpirun
 *     ct_module *model = ct_ddp(ct_nn_linear(784, 10)); // rank 0's weights everywhere
 *     ct_sampler *s = ct_distributed_sampler(60000);    // this rank's share of each epoch
 *     // ... ct_backward(loss) leaves the gradients averaged over the ranks
 *     if (ct_dist_is_main())                            // rank 0 logs and saves checkpoints
 *         printf("%d ranks, %lld samples each\n", ct_dist_world_size(), (long long)ct_sampler_len(s));
 *     ct_dist_destroy();
 *
 * MPI is not a dependency of the library: the MPI backend is a plugin
 * (libctorch_mpi.so, linked against libmpi) that ct_dist_init loads, so programs that
 * never call it neither link nor load MPI.  Calls below return 0 (or a handle) on
 * success and -1 (or NULL) with an error; a collective whose tensors disagree across
 * ranks (shape, dtype, op, root) fails on every rank with an error naming the first
 * difference, instead of hanging. */
#ifndef CTORCH_DISTRIBUTED_H
#define CTORCH_DISTRIBUTED_H

#include "nn.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

/* ---- the process group ------------------------------------------------------ */

/* Which engine moves the data. */
typedef enum {
    CT_DIST_DEFAULT = 0, /* MPI */
    CT_DIST_MPI,         /* Open MPI (CPU tensors) */
    CT_DIST_NCCL,        /* reserved for the CUDA backend */
} ct_dist_backend;

/* Options of ct_dist_init (torch.distributed.init_process_group). */
typedef struct {
    ct_dist_backend backend; /* default CT_DIST_MPI */
} ct_dist_init_options;
/* Joins the default process group: rank and world size from the launcher (Open MPI's
 * OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK; RANK/WORLD_SIZE/LOCAL_RANK, when set, must
 * agree with them).  A program started without mpirun is a world of one.  Fails when
 * already initialised or when the backend cannot be loaded. */
int ct_dist_init_with(ct_dist_init_options o);
#define ct_dist_init(...) CT_AT(ct_dist_init_with(CT_OPTIONS(ct_dist_init_options, __VA_ARGS__)))
bool ct_dist_is_available(void);   /* torch.distributed.is_available(): the MPI plugin loads */
#define ct_dist_is_available(...) CT_AT(ct_dist_is_available(__VA_ARGS__))
bool ct_dist_is_initialized(void); /* is_initialized() */
#define ct_dist_is_initialized(...) CT_AT(ct_dist_is_initialized(__VA_ARGS__))
/* destroy_process_group(): waits for pending work, frees every group, finalises MPI
 * (which cannot be initialised again in the same process). */
int ct_dist_destroy(void);
#define ct_dist_destroy(...) CT_AT(ct_dist_destroy(__VA_ARGS__))
int ct_dist_rank(void);       /* get_rank(): 0 when not initialised */
#define ct_dist_rank(...) CT_AT(ct_dist_rank(__VA_ARGS__))
int ct_dist_world_size(void); /* get_world_size(): 1 when not initialised */
#define ct_dist_world_size(...) CT_AT(ct_dist_world_size(__VA_ARGS__))
int ct_dist_local_rank(void); /* the rank among the processes on this machine */
#define ct_dist_local_rank(...) CT_AT(ct_dist_local_rank(__VA_ARGS__))
/* True on rank 0, and in a program that never initialised: the rank that logs and
 * saves checkpoints. */
bool ct_dist_is_main(void);
#define ct_dist_is_main(...) CT_AT(ct_dist_is_main(__VA_ARGS__))

typedef struct ct_process_group ct_process_group; /* a group of ranks with its own communicator */
/* new_group(ranks): a collective call over the whole world (every rank calls it with
 * the same list).  ranks NULL means all.  Ranks outside the group get a group for
 * which ct_dist_group_rank is -1 and collectives fail.  Groups are freed by
 * ct_dist_destroy. */
ct_process_group *ct_dist_new_group(const int *ranks, int n);
#define ct_dist_new_group(ranks, n) CT_AT(ct_dist_new_group(ranks, n))
int ct_dist_group_rank(const ct_process_group *g); /* this process's rank in g, or -1 */
#define ct_dist_group_rank(g) CT_AT(ct_dist_group_rank(g))
int ct_dist_group_size(const ct_process_group *g); /* how many ranks g has */
#define ct_dist_group_size(g) CT_AT(ct_dist_group_size(g))

/* ---- asynchronous work ---------------------------------------------------- */

/* The handle of a collective started with .work (async_op=True).  Collectives run in
 * the order they were started, on a communication thread of the process. */
typedef struct ct_work ct_work;
int ct_work_wait(ct_work *w);          /* blocks until done: 0, or -1 with the op's error */
#define ct_work_wait(w) CT_AT(ct_work_wait(w))
bool ct_work_is_completed(ct_work *w); /* done (successfully or not), without blocking */
#define ct_work_is_completed(w) CT_AT(ct_work_is_completed(w))
void ct_work_free(ct_work *w);         /* waits if still running, then frees (NULL is ignored) */
#define ct_work_free(w) CT_AT(ct_work_free(w))

/* ---- collectives ------------------------------------------------------------ */

/* torch.distributed.ReduceOp.  For bool tensors SUM and MAX are "or", PRODUCT and MIN
 * "and"; AVG needs a floating dtype.  Floating MAX and MIN propagate NaN. */
typedef enum {
    CT_DIST_SUM = 0,
    CT_DIST_AVG,
    CT_DIST_PRODUCT,
    CT_DIST_MIN,
    CT_DIST_MAX,
} ct_dist_reduce_op;

/* Options shared by the collectives; each reads the fields it documents. */
typedef struct {
    ct_process_group *group; /* NULL: the default group (the world) */
    ct_dist_reduce_op op;    /* reductions: default SUM */
    int root;                /* broadcast's src, reduce/gather's dst, scatter's src (a rank
                              * of the group), default 0 */
    int tag;                 /* send/recv: matches a send to a recv, default 0 */
    ct_work **work;          /* given: start the collective and return at once with the
                              * handle in *work (async_op=True); the tensors are retained
                              * until it completes and must not be touched before */
} ct_dist_options;

/* Every tensor must be contiguous and on the CPU; reductions are computed in rank
 * order with a fixed association, so every rank receives bitwise the same result and
 * a run repeats bitwise (see docs/distributed.md).  Every dtype ctorch has. */

/* all_reduce(t, op): t becomes the reduction of every rank's t, in place. */
int ct_dist_all_reduce_with(ct_tensor *t, ct_dist_options o);
#define ct_dist_all_reduce(t, ...) CT_AT(ct_dist_all_reduce_with(t, CT_OPTIONS(ct_dist_options, __VA_ARGS__)))
/* reduce(t, dst, op): only .root's t receives the reduction. */
int ct_dist_reduce_with(ct_tensor *t, ct_dist_options o);
#define ct_dist_reduce(t, ...) CT_AT(ct_dist_reduce_with(t, CT_OPTIONS(ct_dist_options, __VA_ARGS__)))
/* broadcast(t, src): every rank's t becomes .root's t. */
int ct_dist_broadcast_with(ct_tensor *t, ct_dist_options o);
#define ct_dist_broadcast(t, ...) CT_AT(ct_dist_broadcast_with(t, CT_OPTIONS(ct_dist_options, __VA_ARGS__)))
/* all_gather(out_list, t): out_list[r] (group-size tensors shaped like t) receives
 * rank r's t. */
int ct_dist_all_gather_with(ct_tensor *const *out_list, ct_tensor *t, ct_dist_options o);
#define ct_dist_all_gather(out_list, t, ...) \
    CT_AT(ct_dist_all_gather_with(out_list, t, CT_OPTIONS(ct_dist_options, __VA_ARGS__)))
/* all_gather_into_tensor(out, t): out is [size * d0, ...] (the ranks' t concatenated
 * along dim 0) or [size, *t.shape] (stacked). */
int ct_dist_all_gather_into_tensor_with(ct_tensor *out, ct_tensor *t, ct_dist_options o);
#define ct_dist_all_gather_into_tensor(out, t, ...) \
    CT_AT(ct_dist_all_gather_into_tensor_with(out, t, CT_OPTIONS(ct_dist_options, __VA_ARGS__)))
/* reduce_scatter(out, in_list, op): out becomes the reduction over ranks of their
 * in_list[rank] (group-size tensors shaped like out). */
int ct_dist_reduce_scatter_with(ct_tensor *out, ct_tensor *const *in_list, ct_dist_options o);
#define ct_dist_reduce_scatter(out, in_list, ...) \
    CT_AT(ct_dist_reduce_scatter_with(out, in_list, CT_OPTIONS(ct_dist_options, __VA_ARGS__)))
/* reduce_scatter_tensor(out, in, op): in is [size * d0, ...] or [size, *out.shape]. */
int ct_dist_reduce_scatter_tensor_with(ct_tensor *out, ct_tensor *in, ct_dist_options o);
#define ct_dist_reduce_scatter_tensor(out, in, ...) \
    CT_AT(ct_dist_reduce_scatter_tensor_with(out, in, CT_OPTIONS(ct_dist_options, __VA_ARGS__)))
/* gather(t, gather_list, dst): on .root gather_list[r] receives rank r's t; the other
 * ranks pass NULL. */
int ct_dist_gather_with(ct_tensor *t, ct_tensor *const *gather_list, ct_dist_options o);
#define ct_dist_gather(t, gather_list, ...) \
    CT_AT(ct_dist_gather_with(t, gather_list, CT_OPTIONS(ct_dist_options, __VA_ARGS__)))
/* scatter(t, scatter_list, src): rank r's t receives .root's scatter_list[r]; the
 * other ranks pass NULL. */
int ct_dist_scatter_with(ct_tensor *t, ct_tensor *const *scatter_list, ct_dist_options o);
#define ct_dist_scatter(t, scatter_list, ...) \
    CT_AT(ct_dist_scatter_with(t, scatter_list, CT_OPTIONS(ct_dist_options, __VA_ARGS__)))
/* barrier(): returns when every rank of the group has entered it. */
int ct_dist_barrier_with(ct_dist_options o);
#define ct_dist_barrier(...) CT_AT(ct_dist_barrier_with(CT_OPTIONS(ct_dist_options, __VA_ARGS__)))
/* send(t, dst) / recv(t, src): point to point; src -1 receives from any rank.  recv
 * returns the sender's rank (or -1).  Shapes and dtypes are checked: a mismatch is an
 * error on both sides. */
int ct_dist_send_with(ct_tensor *t, int dst, ct_dist_options o);
#define ct_dist_send(t, dst, ...) CT_AT(ct_dist_send_with(t, dst, CT_OPTIONS(ct_dist_options, __VA_ARGS__)))
/* recv(t, src): fills t from rank src's matching send; returns the sender's rank. */
int ct_dist_recv_with(ct_tensor *t, int src, ct_dist_options o);
#define ct_dist_recv(t, src, ...) CT_AT(ct_dist_recv_with(t, src, CT_OPTIONS(ct_dist_options, __VA_ARGS__)))

/* ---- DistributedDataParallel ---------------------------------------------------- */

/* Options of ct_ddp (torch.nn.parallel.DistributedDataParallel). */
typedef struct {
    ct_process_group *group;     /* NULL: the world */
    double bucket_cap_mb;        /* default 25; the first bucket is capped at 1 MiB as in PyTorch */
    bool broadcast_buffers;      /* default true: rank 0's buffers (BatchNorm's running
                                  * statistics) are sent to every rank at each forward */
    bool find_unused_parameters; /* look for parameters the forward did not use */
} ct_ddp_options;
/* Wraps model (adopting the caller's reference, as ct_module_add does) in a module
 * "DistributedDataParallel" whose child "module" is model: broadcasts rank 0's
 * parameters and buffers, and fails on every rank, naming the first parameter whose
 * shape differs, when the ranks' models disagree (the caller then keeps model).
 * ct_forward(ddp, x) (or ct_forward_multi) runs the model; after a forward in
 * training mode with grad enabled, outside CT_DDP_NO_SYNC, the backward all-reduces
 * the gradients in buckets (reverse registration order) as soon as each bucket's are
 * ready, overlapping communication with the rest of backward, and leaves every .grad
 * averaged over the ranks.  Without ct_dist_init it is a world of one.  Move or
 * convert the model (ct_module_to) before wrapping it. */
ct_module *ct_ddp_with(ct_module *model, ct_ddp_options o);
#define ct_ddp(model, ...) \
    CT_AT(ct_ddp_with(model, CT_DEFAULTS(ct_ddp_options, .broadcast_buffers = true, __VA_ARGS__)))
/* ddp.module: the wrapped model (borrowed).  Save its state dict for keys without
 * the "module." prefix that the wrapper's own state dict has. */
ct_module *ct_ddp_module(ct_module *ddp);
#define ct_ddp_module(ddp) CT_AT(ct_ddp_module(ddp))

/* What CT_DDP_NO_SYNC keeps on the stack. */
typedef struct {
    ct_module *ddp; /* the DDP module */
    bool prev; /* the state to restore */
    int once;  /* the block runs once */
} ct_ddp_no_sync_guard;
ct_ddp_no_sync_guard ct_ddp_no_sync_begin(ct_module *ddp);
#define ct_ddp_no_sync_begin(ddp) CT_AT(ct_ddp_no_sync_begin(ddp))
void ct_ddp_no_sync_end(ct_ddp_no_sync_guard *g);
#define ct_ddp_no_sync_end(g) CT_AT(ct_ddp_no_sync_end(g))
/* CT_DDP_NO_SYNC(ddp) { forward; backward; }: gradients accumulate locally without
 * communication (ddp.no_sync()); the first backward after the block synchronises
 * the sum. */
#define CT_DDP_NO_SYNC(ddp)                                                               \
    for (ct_ddp_no_sync_guard CT_CAT(ct_ns_, __LINE__)                                    \
             __attribute__((cleanup(ct_ddp_no_sync_end))) = ct_ddp_no_sync_begin(ddp);      \
         CT_CAT(ct_ns_, __LINE__).once; CT_CAT(ct_ns_, __LINE__).once = 0)

/* Counters of a DDP module since it was made (or last reset). */
typedef struct {
    int64_t steps;            /* backward passes that synchronised */
    int64_t buckets;          /* bucket all-reduces started (world size 1: counted, none sent) */
    int64_t bytes;            /* gradient bytes all-reduced */
    double backward_s;        /* wall time of those backward passes, each from the end of the
                               * forward that prepared it to the end of its reduction */
    double comm_wait_s;       /* of which spent waiting for communication to finish */
} ct_ddp_stats;
ct_ddp_stats ct_ddp_get_stats(ct_module *ddp, bool reset);
#define ct_ddp_get_stats(ddp, reset) CT_AT(ct_ddp_get_stats(ddp, reset))

/* ---- SyncBatchNorm ------------------------------------------------------------- */

/* nn.SyncBatchNorm.convert_sync_batchnorm(model, group): replaces every BatchNorm1d
 * and BatchNorm2d in model (in place, keeping parameters, buffers and options) by a
 * SyncBatchNorm whose training-mode statistics (and their gradients) are reduced over
 * the group, so they equal BatchNorm's on the ranks' concatenated batch.  Returns
 * model (or the replacement when model itself is a BatchNorm), NULL with an error. */
ct_module *ct_nn_sync_batch_norm_convert(ct_module *model, ct_process_group *group);
#define ct_nn_sync_batch_norm_convert(model, group) CT_AT(ct_nn_sync_batch_norm_convert(model, group))

#ifdef __cplusplus
}
#endif
CT_API_END
#endif
