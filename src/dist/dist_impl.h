/* The process group's private side: the loaded backend, groups, work items and the
 * communication thread that runs them.
 *
 * Note [The communication thread]: MPI requires every rank to start the collectives
 * of a communicator in the same order, and is initialised MPI_THREAD_SERIALIZED: one
 * thread per process (comm.c) makes every MPI call after MPI_Init.  Collectives are
 * queued by the caller and run on it one at a time, in the order they were started;
 * point-to-point operations start as soon as they are queued and progress beside
 * them (a send waiting for its receiver must not hold back the collective or the
 * receive that the peer waits for).  The thread polls its requests with a backoff
 * that grows to ~64 us, so that a rank waiting for the others does not take a core
 * from its compute threads.
 *
 * Note [Deterministic reductions]: every reduction goes to group rank 0 through a
 * non-commutative MPI op (so MPI combines contributions in rank order, with an
 * association fixed by the group size and message size alone), is finished there
 * (AVG's division), and is broadcast from it: every rank receives rank 0's bytes, and
 * a rerun with the same inputs repeats them.
 *
 * Note [Mismatch checks]: before each collective the ranks all-gather a descriptor
 * of their call (kind, op, dtype, shape, root, sequence number); when any differs,
 * every rank fails the op with the same message naming the first difference instead
 * of hanging in a collective whose sizes disagree.  A send first sends its
 * descriptor; the receiver compares it with its own and answers with its own, so
 * that both sides report a mismatch. */
#ifndef CT_DIST_DIST_IMPL_H
#define CT_DIST_DIST_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "ctorch/distributed.h"
#include "dist/backend.h"

/* What a collective call looked like on one rank. */
typedef struct {
    int32_t kind; /* ct_work_kind */
    int32_t op;   /* ct_dist_reduce_op, or -1 */
    int32_t dtype;
    int32_t root; /* or -1 */
    int32_t ndim;
    int32_t invalid; /* the call failed its local checks on this rank */
    int32_t tag, pad;
    int64_t seq; /* collectives started on the group so far */
    int64_t numel;
    int64_t shape[CT_MAX_DIMS];
} ct_dist_desc;

typedef enum {
    CT_WORK_ALL_REDUCE = 1,
    CT_WORK_REDUCE,
    CT_WORK_BROADCAST,
    CT_WORK_ALL_GATHER,
    CT_WORK_ALL_GATHER_INTO,
    CT_WORK_REDUCE_SCATTER,
    CT_WORK_REDUCE_SCATTER_TENSOR,
    CT_WORK_GATHER,
    CT_WORK_SCATTER,
    CT_WORK_BARRIER,
    CT_WORK_SEND,
    CT_WORK_RECV,
    CT_WORK_NEW_GROUP,
    CT_WORK_STOP, /* ends the communication thread */
} ct_work_kind;

struct ct_process_group {
    ct_dist_comm *comm; /* collectives; NULL outside the group */
    ct_dist_comm *ctl;  /* point to point: descriptors (tag = the user's) */
    ct_dist_comm *p2p;  /* point to point: answers and data (tags from the sender's sequence) */
    int rank, size;     /* rank -1 outside */
    int *ranks;         /* the world ranks of the members, in group order */
    int64_t seq;        /* collectives queued (the caller's thread) */
    int64_t p2p_seq;    /* sends queued */
    int tag_ub;
    ct_process_group *next; /* every group, for ct_dist_destroy */
};

#define CT_WORK_MAX_TENSORS 2
struct ct_work {
    ct_work_kind kind;
    const char *fn; /* "ct_dist_all_reduce": names its errors */
    ct_process_group *g;
    ct_dist_desc desc;
    int red;  /* ct_dist_red */
    bool avg; /* divide by the group size at the root */
    int dtype, elem;
    int64_t count;    /* elements per rank */
    void *buf;        /* the tensor's data (in place) */
    void *buf2;       /* the second buffer (output, or the packed list) */
    void *tmp;        /* scratch owned by the work */
    ct_tensor **list; /* list tensors copied in/out around tmp */
    int nlist;
    ct_tensor *held[CT_WORK_MAX_TENSORS]; /* retained until freed */
    int peer;                             /* send's dst / recv's src (group ranks; -1: any) */
    int source;                           /* recv: the sender */
    /* new_group */
    int color, key;
    ct_dist_comm *new_comm, *new_ctl, *new_p2p;

    /* the communication thread's state */
    int stage;
    ct_dist_req *req;
    ct_dist_desc *descs; /* every rank's descriptor */
    ct_dist_desc peer_desc, answer;
    int64_t p2p_tag;
    ct_work *next;

    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done, failed;
    char err[512];
};

/* The state of the process (dist/process_group.c). */
extern const ct_dist_engine *ct_dist_be;
extern ct_process_group *ct_dist_world_group;

/* Loads the plugin (dist/plugin.c): its table, or NULL with an error naming fn. */
const ct_dist_engine *ct_dist_load_plugin(const char *fn);

/* The communication thread (dist/comm.c). */
int ct_dist_comm_start(void);
void ct_dist_comm_stop(void);
/* Threads blocked in a wait for work (Note [Polling], dist/comm.c). */
extern atomic_int ct_dist_waiters;
/* Queues w (the caller's order is the order it runs in). */
void ct_dist_enqueue(ct_work *w);

/* Work items (dist/work.c). */
ct_work *ct_work_new(ct_work_kind kind, const char *fn, ct_process_group *g);
void ct_work_finish(ct_work *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Queues w and returns 0 with it in *out when given, else waits for it, frees it and
 * returns its result. */
int ct_work_submit(ct_work *w, ct_work **out);

/* The group of o (the world when NULL), or NULL with an error when not initialised. */
ct_process_group *ct_dist_group_of(const char *fn, ct_process_group *g);

/* dist/reduce.c: the arithmetic of the reductions, and AVG's division. */
void ct_dist_combine(void *inout, const void *in, int64_t n, int dtype, ct_dist_red op);
void ct_dist_divide(void *buf, int64_t n, int dtype, int by);

/* "[3, 4] (float32)" */
const char *ct_dist_desc_str(const ct_dist_desc *d, char *buf, size_t n);

#endif
