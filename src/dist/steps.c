/* The steps of the collectives on the communication thread: the descriptor check
 * (Note [Mismatch checks]), then each kind's MPI operations, reductions through group
 * rank 0 (Note [Deterministic reductions]). */
#include <stdio.h>
#include <string.h>

#include "dist/steps.h"
#include "core/error.h"
#include "core/mem.h"
#include "core/tensor_impl.h"

static const char *kind_name(int k) {
    static const char *names[] = {
        [CT_WORK_ALL_REDUCE] = "ct_dist_all_reduce",
        [CT_WORK_REDUCE] = "ct_dist_reduce",
        [CT_WORK_BROADCAST] = "ct_dist_broadcast",
        [CT_WORK_ALL_GATHER] = "ct_dist_all_gather",
        [CT_WORK_ALL_GATHER_INTO] = "ct_dist_all_gather_into_tensor",
        [CT_WORK_REDUCE_SCATTER] = "ct_dist_reduce_scatter",
        [CT_WORK_REDUCE_SCATTER_TENSOR] = "ct_dist_reduce_scatter_tensor",
        [CT_WORK_GATHER] = "ct_dist_gather",
        [CT_WORK_SCATTER] = "ct_dist_scatter",
        [CT_WORK_BARRIER] = "ct_dist_barrier",
        [CT_WORK_SEND] = "ct_dist_send",
        [CT_WORK_RECV] = "ct_dist_recv",
        [CT_WORK_NEW_GROUP] = "ct_dist_new_group",
    };
    return k > 0 && k < (int)(sizeof names / sizeof *names) && names[k] ? names[k]
                                                                        : "an unknown operation";
}
static const char *op_name(int op) {
    static const char *names[] = {"SUM", "AVG", "PRODUCT", "MIN", "MAX"};
    return op >= 0 && op < 5 ? names[op] : "none";
}

const char *ct_dist_desc_str(const ct_dist_desc *d, char *buf, size_t n) {
    char shape[CT_SHAPE_STR_MAX];
    int nd = d->ndim < 0 || d->ndim > CT_MAX_DIMS ? 0 : d->ndim;
    const char *dt =
        d->dtype > 0 && d->dtype < CT_NUM_DTYPES ? (ct_dtype_name)((ct_dtype)d->dtype) : "?";
    snprintf(buf, n, "%s (%s)", ct_shape_str(nd, d->shape, shape), dt);
    return buf;
}

static bool same_tensor(const ct_dist_desc *a, const ct_dist_desc *b) {
    if (a->dtype != b->dtype || a->ndim != b->ndim || a->numel != b->numel) return false;
    for (int i = 0; i < a->ndim && i < CT_MAX_DIMS; i++)
        if (a->shape[i] != b->shape[i]) return false;
    return true;
}

/* Fails w with the first difference between the ranks' descriptors; false when they agree. */
static bool mismatch(ct_work *w) {
    int n = w->g->size;
    const ct_dist_desc *d = w->descs;
    for (int r = 0; r < n; r++)
        if (d[r].invalid) {
            ct_work_finish(w, "%s: rank %d's call failed its own checks (its error says why)",
                           w->fn, r);
            return true;
        }
    char a[CT_SHAPE_STR_MAX + 32], b[CT_SHAPE_STR_MAX + 32];
    for (int r = 1; r < n; r++) {
        const ct_dist_desc *x = &d[r], *z = &d[0];
        if (x->kind != z->kind) {
            ct_work_finish(
                w,
                "%s: rank %d called %s but rank 0 called %s (every rank must call the same "
                "collectives in the same order)",
                w->fn, r, kind_name(x->kind), kind_name(z->kind));
        } else if (x->seq != z->seq) {
            ct_work_finish(
                w, "%s: rank %d is at its collective #%lld of the group but rank 0 at #%lld", w->fn,
                r, (long long)x->seq, (long long)z->seq);
        } else if (!same_tensor(x, z)) {
            ct_work_finish(w, "%s: rank %d has shape %s but rank 0 has %s", w->fn, r,
                           ct_dist_desc_str(x, a, sizeof a), ct_dist_desc_str(z, b, sizeof b));
        } else if (x->op != z->op) {
            ct_work_finish(w, "%s: rank %d uses op %s but rank 0 uses %s", w->fn, r, op_name(x->op),
                           op_name(z->op));
        } else if (x->root != z->root) {
            ct_work_finish(w, "%s: rank %d gives root %d but rank 0 gives root %d", w->fn, r,
                           x->root, z->root);
        } else {
            continue;
        }
        return true;
    }
    return false;
}

static bool failed_to_start(ct_work *w) {
    ct_work_finish(w, "%s: %s", w->fn, ct_dist_be->error());
    return true;
}
/* Starts a request (the next step runs when it is done), or fails w. */
#define START(call)                                                                                \
    do {                                                                                           \
        w->req = (call);                                                                           \
        w->stage++;                                                                                \
        return w->req ? false : failed_to_start(w);                                                \
    } while (0)
#define FINISH()                                                                                   \
    do {                                                                                           \
        ct_work_finish(w, NULL);                                                                   \
        return true;                                                                               \
    } while (0)

/* Rank 0's part between the reduction and what follows: AVG's division. */
static void finish_reduction(ct_work *w, void *buf, int64_t count, int at) {
    if (w->avg && w->g->rank == at) ct_dist_divide(buf, count, w->dtype, w->g->size);
}

static bool new_group_step(ct_work *w) {
    const ct_dist_engine *be = ct_dist_be;
    int failed = 0;
    w->new_comm = be->comm_split(ct_dist_world_group->comm, w->color, w->key, &failed);
    if (failed) return failed_to_start(w);
    if (w->new_comm) {
        w->new_ctl = be->comm_dup(w->new_comm);
        w->new_p2p = w->new_ctl ? be->comm_dup(w->new_comm) : NULL;
        if (!w->new_p2p) {
            be->comm_free(w->new_ctl);
            be->comm_free(w->new_comm);
            w->new_comm = w->new_ctl = NULL;
            return failed_to_start(w);
        }
    }
    FINISH();
}

static void copy_out(ct_work *w) { /* tmp's size slices into the list's tensors */
    size_t bytes = (size_t)w->count * (size_t)w->elem;
    for (int r = 0; r < w->nlist; r++)
        memcpy(ct_tensor_data(w->list[r]), (char *)w->tmp + bytes * r, bytes);
}

bool ct_dist_step(ct_work *w) {
    if (w->kind == CT_WORK_SEND || w->kind == CT_WORK_RECV) return ct_dist_p2p_step(w);
    if (w->kind == CT_WORK_NEW_GROUP) return new_group_step(w);
    const ct_dist_engine *be = ct_dist_be;
    ct_dist_comm *c = w->g->comm;
    if (w->stage == 0) {
        w->descs = ct_calloc((size_t)w->g->size, sizeof(ct_dist_desc));
        if (!w->descs) {
            ct_work_finish(w, "%s: out of memory", w->fn);
            return true;
        }
        START(be->iallgather(c, &w->desc, w->descs, sizeof(ct_dist_desc), CT_U8));
    }
    if (w->stage == 1) {
        if (mismatch(w)) return true;
        w->stage = 2;
    }
    int root = w->desc.root, s = w->stage;
    switch (w->kind) {
    case CT_WORK_ALL_REDUCE:
        if (s == 2) START(be->ireduce(c, w->buf, w->buf, w->count, w->dtype, w->red, 0));
        if (s == 3) {
            finish_reduction(w, w->buf, w->count, 0);
            START(be->ibcast(c, w->buf, w->count, w->dtype, 0));
        }
        FINISH();
    case CT_WORK_REDUCE:
        if (s == 2) START(be->ireduce(c, w->buf, w->buf, w->count, w->dtype, w->red, root));
        finish_reduction(w, w->buf, w->count, root);
        FINISH();
    case CT_WORK_BROADCAST:
        if (s == 2) START(be->ibcast(c, w->buf, w->count, w->dtype, root));
        FINISH();
    case CT_WORK_ALL_GATHER:
        if (s == 2) START(be->iallgather(c, w->buf, w->tmp, w->count, w->dtype));
        copy_out(w);
        FINISH();
    case CT_WORK_ALL_GATHER_INTO:
        if (s == 2) START(be->iallgather(c, w->buf, w->buf2, w->count, w->dtype));
        FINISH();
    case CT_WORK_REDUCE_SCATTER:
    case CT_WORK_REDUCE_SCATTER_TENSOR: {
        /* tmp: this rank's size * count inputs, reduced in place on rank 0, then scattered */
        int64_t all = w->count * w->g->size;
        if (s == 2) START(be->ireduce(c, w->tmp, w->tmp, all, w->dtype, w->red, 0));
        if (s == 3) {
            finish_reduction(w, w->tmp, all, 0);
            START(be->iscatter(c, w->tmp, w->buf, w->count, w->dtype, 0));
        }
        FINISH();
    }
    case CT_WORK_GATHER:
        if (s == 2) START(be->igather(c, w->buf, w->tmp, w->count, w->dtype, root));
        if (w->g->rank == root) copy_out(w);
        FINISH();
    case CT_WORK_SCATTER:
        if (s == 2) START(be->iscatter(c, w->tmp, w->buf, w->count, w->dtype, root));
        FINISH();
    case CT_WORK_BARRIER:
        if (s == 2) START(be->ibarrier(c));
        FINISH();
    default:
        ct_work_finish(w, "%s: unknown work kind %d", w->fn, w->kind);
        return true;
    }
}
