/* The steps of each kind of work, run by the communication thread (dist/steps.c,
 * dist/p2p.c). */
#ifndef CT_DIST_STEPS_H
#define CT_DIST_STEPS_H

#include "dist/dist_impl.h"

/* Runs w's next step, its previous request (if any) being done: starts a request
 * (w->req) and returns false, or finishes w (ct_work_finish) and returns true. */
bool ct_dist_step(ct_work *w);
/* The same for a send or a receive. */
bool ct_dist_p2p_step(ct_work *w);

#endif
