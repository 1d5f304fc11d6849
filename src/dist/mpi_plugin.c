/* libctorch_mpi.so: the MPI backend of the process group (Note [The MPI plugin],
 * dist/backend.h).  Not part of libctorch: built only when CMake finds MPI, linked
 * against libmpi, and loaded by ct_dist_init.
 *
 * Each ctorch dtype is an MPI contiguous type of its size in bytes; each reduction a
 * user MPI_Op, non-commutative so that MPI combines the ranks' contributions in rank
 * order (the fixed association of Note [Deterministic reductions], dist/dist_impl.h),
 * whose arithmetic is libctorch's combine function. */
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/backend.h"

#define MAX_DTYPES 32

struct ct_dist_comm {
    MPI_Comm comm;
};
struct ct_dist_req {
    MPI_Request req;
};

static ct_dist_combine_fn combine;
static int ndtypes;
static MPI_Datatype types[MAX_DTYPES];
static MPI_Op ops[CT_DIST_RED_COUNT];
static char err_msg[512];

static void set_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err_msg, sizeof err_msg, fmt, ap);
    va_end(ap);
}
/* "MPI_Ibcast: MPI_ERR_TRUNCATE: message truncated" */
static void mpi_error(const char *call, int rc) {
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS) snprintf(s, sizeof s, "error %d", rc);
    set_error("%s: %s", call, s);
}
static const char *last_error(void) { return err_msg; }

/* The dtype whose MPI type is t, or -1. */
static int dtype_of(MPI_Datatype t) {
    for (int d = 0; d < ndtypes; d++)
        if (types[d] != MPI_DATATYPE_NULL && types[d] == t) return d;
    return -1;
}
#define RED_FN(name, red)                                                                          \
    static void name(void *in, void *inout, int *len, MPI_Datatype *t) {                           \
        int d = dtype_of(*t);                                                                      \
        if (d >= 0) combine(inout, in, *len, d, red);                                              \
    }
RED_FN(red_sum, CT_DIST_RED_SUM)
RED_FN(red_prod, CT_DIST_RED_PROD)
RED_FN(red_min, CT_DIST_RED_MIN)
RED_FN(red_max, CT_DIST_RED_MAX)

static int plugin_init(ct_dist_combine_fn fn, const uint8_t *sizes, int n, int *rank, int *size,
                       int *local_rank) {
    if (n > MAX_DTYPES) {
        set_error("too many dtypes (%d)", n);
        return -1;
    }
    int provided = 0, rc;
    if ((rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided)) != MPI_SUCCESS) {
        mpi_error("MPI_Init_thread", rc);
        return -1;
    }
    if (provided < MPI_THREAD_SERIALIZED) {
        set_error(
            "MPI_Init_thread: the MPI library provides thread level %d, not MPI_THREAD_SERIALIZED",
            provided);
        MPI_Finalize();
        return -1;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    combine = fn;
    ndtypes = n;
    for (int d = 0; d < n; d++) {
        types[d] = MPI_DATATYPE_NULL;
        if (sizes[d] == 0) continue;
        MPI_Type_contiguous(sizes[d], MPI_BYTE, &types[d]);
        MPI_Type_commit(&types[d]);
    }
    MPI_User_function *fns[CT_DIST_RED_COUNT] = {red_sum, red_prod, red_min, red_max};
    for (int i = 0; i < CT_DIST_RED_COUNT; i++) MPI_Op_create(fns[i], 0, &ops[i]);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    /* The processes sharing this machine's memory, ordered by world rank. */
    MPI_Comm node;
    *local_rank = 0;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, *rank, MPI_INFO_NULL, &node) ==
        MPI_SUCCESS) {
        MPI_Comm_rank(node, local_rank);
        MPI_Comm_free(&node);
    }
    return 0;
}

static void plugin_finalize(void) {
    for (int i = 0; i < CT_DIST_RED_COUNT; i++) MPI_Op_free(&ops[i]);
    for (int d = 0; d < ndtypes; d++)
        if (types[d] != MPI_DATATYPE_NULL) MPI_Type_free(&types[d]);
    MPI_Finalize();
}

static ct_dist_comm *wrap(MPI_Comm c) {
    ct_dist_comm *w = malloc(sizeof *w);
    if (!w) {
        MPI_Comm_free(&c);
        set_error("out of memory");
        return NULL;
    }
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    w->comm = c;
    return w;
}
static ct_dist_comm *comm_world(void) {
    MPI_Comm c;
    int rc = MPI_Comm_dup(MPI_COMM_WORLD, &c);
    if (rc != MPI_SUCCESS) {
        mpi_error("MPI_Comm_dup", rc);
        return NULL;
    }
    return wrap(c);
}
static ct_dist_comm *comm_dup(ct_dist_comm *p) {
    MPI_Comm c;
    int rc = MPI_Comm_dup(p->comm, &c);
    if (rc != MPI_SUCCESS) {
        mpi_error("MPI_Comm_dup", rc);
        return NULL;
    }
    return wrap(c);
}
static ct_dist_comm *comm_split(ct_dist_comm *p, int color, int key, int *failed) {
    MPI_Comm c;
    *failed = 0;
    int rc = MPI_Comm_split(p->comm, color < 0 ? MPI_UNDEFINED : color, key, &c);
    if (rc != MPI_SUCCESS) {
        mpi_error("MPI_Comm_split", rc);
        *failed = 1;
        return NULL;
    }
    if (c == MPI_COMM_NULL) return NULL;
    ct_dist_comm *w = wrap(c);
    if (!w) *failed = 1;
    return w;
}
static void comm_free(ct_dist_comm *c) {
    if (!c) return;
    MPI_Comm_free(&c->comm);
    free(c);
}
static int comm_rank(ct_dist_comm *c) {
    int r = -1;
    MPI_Comm_rank(c->comm, &r);
    return r;
}
static int comm_size(ct_dist_comm *c) {
    int s = 0;
    MPI_Comm_size(c->comm, &s);
    return s;
}
static int tag_ub(ct_dist_comm *c) {
    int *ub, flag = 0;
    MPI_Comm_get_attr(c->comm, MPI_TAG_UB, &ub, &flag);
    return flag ? *ub : 32767;
}

/* MPI counts are ints: larger buffers are refused rather than cut. */
static int count_ok(const char *call, int64_t count, int dtype) {
    if (count > 0x7fffffff) {
        set_error("%s: %lld elements are more than MPI's int count can send at once", call,
                  (long long)count);
        return 0;
    }
    if (dtype < 0 || dtype >= ndtypes || types[dtype] == MPI_DATATYPE_NULL) {
        set_error("%s: unknown dtype %d", call, dtype);
        return 0;
    }
    return 1;
}
/* A request from the return code of the call that started it. */
static ct_dist_req *started(const char *call, int rc, MPI_Request r) {
    if (rc != MPI_SUCCESS) {
        mpi_error(call, rc);
        return NULL;
    }
    ct_dist_req *q = malloc(sizeof *q);
    if (!q) {
        /* cannot cancel a collective: let it finish, then report */
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        set_error("%s: out of memory", call);
        return NULL;
    }
    q->req = r;
    return q;
}

static ct_dist_req *ireduce(ct_dist_comm *c, const void *send, void *recv, int64_t count, int dtype,
                            ct_dist_red op, int root) {
    if (!count_ok("MPI_Ireduce", count, dtype)) return NULL;
    MPI_Request r;
    int in_place = send == recv && comm_rank(c) == root;
    int rc = MPI_Ireduce(in_place ? MPI_IN_PLACE : send, recv, (int)count, types[dtype], ops[op],
                         root, c->comm, &r);
    return started("MPI_Ireduce", rc, r);
}
static ct_dist_req *ibcast(ct_dist_comm *c, void *buf, int64_t count, int dtype, int root) {
    if (!count_ok("MPI_Ibcast", count, dtype)) return NULL;
    MPI_Request r;
    int rc = MPI_Ibcast(buf, (int)count, types[dtype], root, c->comm, &r);
    return started("MPI_Ibcast", rc, r);
}
static ct_dist_req *iallgather(ct_dist_comm *c, const void *send, void *recv, int64_t count,
                               int dtype) {
    if (!count_ok("MPI_Iallgather", count, dtype)) return NULL;
    MPI_Request r;
    int rc =
        MPI_Iallgather(send, (int)count, types[dtype], recv, (int)count, types[dtype], c->comm, &r);
    return started("MPI_Iallgather", rc, r);
}
static ct_dist_req *igather(ct_dist_comm *c, const void *send, void *recv, int64_t count, int dtype,
                            int root) {
    if (!count_ok("MPI_Igather", count, dtype)) return NULL;
    MPI_Request r;
    int rc = MPI_Igather(send, (int)count, types[dtype], recv, (int)count, types[dtype], root,
                         c->comm, &r);
    return started("MPI_Igather", rc, r);
}
static ct_dist_req *iscatter(ct_dist_comm *c, const void *send, void *recv, int64_t count,
                             int dtype, int root) {
    if (!count_ok("MPI_Iscatter", count, dtype)) return NULL;
    MPI_Request r;
    int rc = MPI_Iscatter(send, (int)count, types[dtype], recv, (int)count, types[dtype], root,
                          c->comm, &r);
    return started("MPI_Iscatter", rc, r);
}
static ct_dist_req *ireduce_scatter_block(ct_dist_comm *c, const void *send, void *recv,
                                          int64_t count, int dtype, ct_dist_red op) {
    if (!count_ok("MPI_Ireduce_scatter_block", count, dtype)) return NULL;
    MPI_Request r;
    int rc = MPI_Ireduce_scatter_block(send, recv, (int)count, types[dtype], ops[op], c->comm, &r);
    return started("MPI_Ireduce_scatter_block", rc, r);
}
static ct_dist_req *ibarrier(ct_dist_comm *c) {
    MPI_Request r;
    int rc = MPI_Ibarrier(c->comm, &r);
    return started("MPI_Ibarrier", rc, r);
}
static ct_dist_req *isend(ct_dist_comm *c, const void *buf, int64_t count, int dtype, int dst,
                          int tag) {
    if (!count_ok("MPI_Isend", count, dtype)) return NULL;
    MPI_Request r;
    int rc = MPI_Isend(buf, (int)count, types[dtype], dst, tag, c->comm, &r);
    return started("MPI_Isend", rc, r);
}
static ct_dist_req *irecv(ct_dist_comm *c, void *buf, int64_t count, int dtype, int src, int tag) {
    if (!count_ok("MPI_Irecv", count, dtype)) return NULL;
    MPI_Request r;
    int rc =
        MPI_Irecv(buf, (int)count, types[dtype], src < 0 ? MPI_ANY_SOURCE : src, tag, c->comm, &r);
    return started("MPI_Irecv", rc, r);
}
static int test(ct_dist_req *q, int *source) {
    int done = 0;
    MPI_Status st;
    int rc = MPI_Test(&q->req, &done, &st);
    if (rc != MPI_SUCCESS) {
        mpi_error("MPI_Test", rc == MPI_ERR_IN_STATUS ? st.MPI_ERROR : rc);
        free(q);
        return -1;
    }
    if (!done) return 0;
    if (source) *source = st.MPI_SOURCE;
    free(q);
    return 1;
}

static const ct_dist_engine MPI_BACKEND = {
    .abi = CT_DIST_BACKEND_ABI,
    .name = "mpi",
    .init = plugin_init,
    .finalize = plugin_finalize,
    .error = last_error,
    .comm_world = comm_world,
    .comm_split = comm_split,
    .comm_dup = comm_dup,
    .comm_free = comm_free,
    .comm_rank = comm_rank,
    .comm_size = comm_size,
    .tag_ub = tag_ub,
    .ireduce = ireduce,
    .ibcast = ibcast,
    .iallgather = iallgather,
    .igather = igather,
    .iscatter = iscatter,
    .ireduce_scatter_block = ireduce_scatter_block,
    .ibarrier = ibarrier,
    .isend = isend,
    .irecv = irecv,
    .test = test,
};

__attribute__((visibility("default"))) const ct_dist_engine *ct_dist_plugin_backend(void) {
    return &MPI_BACKEND;
}
