/* Intra-op thread counts, private side (public: ct_set_num_threads in ctorch/base.h). */
#ifndef CT_CORE_THREADS_H
#define CT_CORE_THREADS_H

/* Overrides ct_get_num_threads() for the calling thread only (0 removes the
 * override).  DataLoader workers run their ops on one thread each, as PyTorch's
 * workers do (torch.set_num_threads(1)): several workers each leading an OpenMP team
 * would oversubscribe the cores and spin. */
void ct_set_thread_num_threads(int n);

#endif
