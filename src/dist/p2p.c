/* Send and receive on the communication thread (Note [Mismatch checks]).
 *
 * The send's descriptor goes on the group's ctl communicator with the user's tag (so
 * that a receive from any rank matches by tag, as MPI's would); the receiver answers
 * with its own descriptor, and the data follows, both on the p2p communicator with
 * tags 2s and 2s + 1 where s is the send's number on its rank, so that several
 * sends between the same two ranks never take each other's answer or data. */
#include <stdio.h>

#include "dist/steps.h"
#include "core/error.h"

static bool agree(const ct_dist_desc *a, const ct_dist_desc *b) {
    if (a->invalid || b->invalid || a->dtype != b->dtype || a->ndim != b->ndim ||
        a->numel != b->numel)
        return false;
    for (int i = 0; i < a->ndim && i < CT_MAX_DIMS; i++)
        if (a->shape[i] != b->shape[i]) return false;
    return true;
}

static bool started(ct_work *w) {
    w->stage++;
    if (w->req) return false;
    ct_work_finish(w, "%s: %s", w->fn, ct_dist_be->error());
    return true;
}

static bool send_step(ct_work *w) {
    const ct_dist_engine *be = ct_dist_be;
    ct_process_group *g = w->g;
    char a[CT_SHAPE_STR_MAX + 32], b[CT_SHAPE_STR_MAX + 32];
    switch (w->stage) {
    case 0:
        w->req = be->isend(g->ctl, &w->desc, sizeof w->desc, CT_U8, w->peer, w->desc.tag);
        return started(w);
    case 1:
        w->req =
            be->irecv(g->p2p, &w->answer, sizeof w->answer, CT_U8, w->peer, (int)(2 * w->p2p_tag));
        return started(w);
    case 2:
        if (!agree(&w->desc, &w->answer)) {
            if (w->answer.invalid)
                ct_work_finish(w, "%s: rank %d's matching ct_dist_recv failed its own checks",
                               w->fn, w->peer);
            else
                ct_work_finish(w, "%s: rank %d receives into shape %s but this rank (%d) sends %s",
                               w->fn, w->peer, ct_dist_desc_str(&w->answer, a, sizeof a), g->rank,
                               ct_dist_desc_str(&w->desc, b, sizeof b));
            return true;
        }
        w->req = be->isend(g->p2p, w->buf, w->count, w->dtype, w->peer, (int)(2 * w->p2p_tag + 1));
        return started(w);
    default:
        ct_work_finish(w, NULL);
        return true;
    }
}

static bool recv_step(ct_work *w) {
    const ct_dist_engine *be = ct_dist_be;
    ct_process_group *g = w->g;
    char a[CT_SHAPE_STR_MAX + 32], b[CT_SHAPE_STR_MAX + 32];
    switch (w->stage) {
    case 0:
        w->req = be->irecv(g->ctl, &w->peer_desc, sizeof w->peer_desc, CT_U8, w->peer, w->desc.tag);
        return started(w);
    case 1:
        w->peer = w->source; /* the sender, also when any rank could send */
        w->req = be->isend(g->p2p, &w->desc, sizeof w->desc, CT_U8, w->peer,
                           (int)(2 * w->peer_desc.seq));
        return started(w);
    case 2:
        if (!agree(&w->desc, &w->peer_desc)) {
            if (w->peer_desc.invalid)
                ct_work_finish(w, "%s: rank %d's matching ct_dist_send failed its own checks",
                               w->fn, w->peer);
            else
                ct_work_finish(w, "%s: rank %d sent shape %s but this rank (%d) receives into %s",
                               w->fn, w->peer, ct_dist_desc_str(&w->peer_desc, a, sizeof a),
                               g->rank, ct_dist_desc_str(&w->desc, b, sizeof b));
            return true;
        }
        w->req =
            be->irecv(g->p2p, w->buf, w->count, w->dtype, w->peer, (int)(2 * w->peer_desc.seq + 1));
        return started(w);
    default:
        ct_work_finish(w, NULL);
        return true;
    }
}

bool ct_dist_p2p_step(ct_work *w) { return w->kind == CT_WORK_SEND ? send_step(w) : recv_step(w); }
