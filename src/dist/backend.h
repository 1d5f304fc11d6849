/* The seam between libctorch and a distributed backend plugin (libctorch_mpi.so).
 *
 * Note [The MPI plugin]: MPI is not a dependency of libctorch.  The plugin, linked
 * against libmpi, is dlopen()ed by ct_dist_init and hands back this table; programs
 * that never initialise the process group neither link nor load MPI.  The table speaks
 * of raw contiguous buffers, element types (ctorch's dtype numbers, of which the
 * plugin knows only the sizes) and opaque communicators and requests: every MPI type
 * stays inside the plugin.
 *
 * Threading: init and finalize run on the thread that called ct_dist_init /
 * ct_dist_destroy; everything else on the communication thread alone (MPI is
 * initialised with MPI_THREAD_SERIALIZED).  Functions that fail return NULL or -1 and
 * leave a message for error(). */
#ifndef CT_DIST_BACKEND_H
#define CT_DIST_BACKEND_H

#include <stddef.h>
#include <stdint.h>

/* Bumped when the table changes: a plugin of another version is refused. */
#define CT_DIST_BACKEND_ABI 1
/* The plugin's one exported function. */
#define CT_DIST_PLUGIN_ENTRY "ct_dist_plugin_backend"

typedef struct ct_dist_comm ct_dist_comm; /* a communicator */
typedef struct ct_dist_req ct_dist_req;   /* an operation in flight */

/* The reduction ops the plugin defines, one per ct_dist_reduce_op except AVG (a SUM
 * divided afterwards). */
typedef enum {
    CT_DIST_RED_SUM,
    CT_DIST_RED_PROD,
    CT_DIST_RED_MIN,
    CT_DIST_RED_MAX,
    CT_DIST_RED_COUNT
} ct_dist_red;

/* inout[i] = in[i] (op) inout[i] for n elements of dtype, where `in` holds the
 * contribution of the lower ranks: libctorch's, so that the plugin needs no dtype
 * arithmetic (float16, bfloat16, NaN-propagating max). */
typedef void (*ct_dist_combine_fn)(void *inout, const void *in, int64_t n, int dtype,
                                   ct_dist_red op);

typedef struct {
    int abi; /* CT_DIST_BACKEND_ABI */
    const char *name;
    /* Initialises MPI; elem_sizes[d] is dtype d's size in bytes (0: none) for
     * d < ndtypes.  Fills the world rank and size and the local rank (among the
     * processes of this machine). */
    int (*init)(ct_dist_combine_fn combine, const uint8_t *elem_sizes, int ndtypes, int *rank,
                int *size, int *local_rank);
    void (*finalize)(void);
    const char *(*error)(void); /* the last failure's message */
    /* A duplicate of the world communicator. */
    ct_dist_comm *(*comm_world)(void);
    /* A collective over parent: the ranks giving the same color >= 0 get a new
     * communicator ordered by key; color -1 gets NULL (no error). */
    ct_dist_comm *(*comm_split)(ct_dist_comm *parent, int color, int key, int *failed);
    ct_dist_comm *(*comm_dup)(ct_dist_comm *c);
    void (*comm_free)(ct_dist_comm *c);
    int (*comm_rank)(ct_dist_comm *c);
    int (*comm_size)(ct_dist_comm *c);
    int (*tag_ub)(ct_dist_comm *c); /* the largest tag */

    /* Non-blocking operations: count elements of dtype; buffers may be NULL where MPI
     * ignores them (the receive side on non-roots).  send == recv means in place. */
    ct_dist_req *(*ireduce)(ct_dist_comm *c, const void *send, void *recv, int64_t count, int dtype,
                            ct_dist_red op, int root);
    ct_dist_req *(*ibcast)(ct_dist_comm *c, void *buf, int64_t count, int dtype, int root);
    /* recv holds size * count elements, rank r's at r * count */
    ct_dist_req *(*iallgather)(ct_dist_comm *c, const void *send, void *recv, int64_t count,
                               int dtype);
    ct_dist_req *(*igather)(ct_dist_comm *c, const void *send, void *recv, int64_t count, int dtype,
                            int root);
    ct_dist_req *(*iscatter)(ct_dist_comm *c, const void *send, void *recv, int64_t count,
                             int dtype, int root);
    /* recv (count elements) receives the reduction of every rank's send[rank * count ...] */
    ct_dist_req *(*ireduce_scatter_block)(ct_dist_comm *c, const void *send, void *recv,
                                          int64_t count, int dtype, ct_dist_red op);
    ct_dist_req *(*ibarrier)(ct_dist_comm *c);
    ct_dist_req *(*isend)(ct_dist_comm *c, const void *buf, int64_t count, int dtype, int dst,
                          int tag);
    /* src -1: any source */
    ct_dist_req *(*irecv)(ct_dist_comm *c, void *buf, int64_t count, int dtype, int src, int tag);
    /* 1 when r completed (then freed; *source, if given, is a receive's sender), 0 when
     * still in flight, -1 when it failed (freed). */
    int (*test)(ct_dist_req *r, int *source);
} ct_dist_engine;

typedef const ct_dist_engine *(*ct_dist_plugin_entry_fn)(void);

#endif
