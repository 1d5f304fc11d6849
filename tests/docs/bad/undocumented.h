/* ctorch/undocumented.h — a header the reference check must refuse.
 *
 *     ct_documented(1);
 */
#ifndef CTORCH_UNDOCUMENTED_H
#define CTORCH_UNDOCUMENTED_H

/* Documented: returns x. */
int ct_documented(int x);
#define ct_documented(x) CT_AT(ct_documented(x))

int ct_undocumented_twin(int x);
#define ct_undocumented_twin(x) CT_AT(ct_undocumented_twin(x))

#endif
