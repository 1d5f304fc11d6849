/* The context of every documentation example (see extract.awk): a fragment may use
 * these names without declaring them.  Its own declarations shadow them. */
#ifndef CT_DOC_EXAMPLE_H
#define CT_DOC_EXAMPLE_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"

/* Checks that t prints as want (the comment of the example line). */
void ct_doc_expect(const ct_tensor *t, const char *want);
/* ct_print, or a note while the library has none (see doc_example.c). */
void ct_doc_print(const ct_tensor *t);
#undef ct_print
#define ct_print(t) ct_doc_print(t)
void ct_doc_setup(void);
int ct_doc_finish(void); /* the exit status: 1 when an expectation failed */

#define CT_DOC_EXAMPLE_BEGIN                                                        \
    ct_doc_setup();                                                                 \
    CT_SCOPE {                                                                      \
        ct_tensor *t = ct_ones(CT_SHAPE(2, 3, 4));                   /* float32 */   \
        ct_tensor *x = ct_tensor_f32(((float[]){1, 2, 3}), CT_SHAPE(3),             \
                                     .requires_grad = true);                        \
        ct_tensor *a = ct_tensor_f64(((double[]){0.5, -1, 2}), CT_SHAPE(3),         \
                                     .requires_grad = true);                        \
        ct_tensor *b = ct_tensor_f64(((double[]){1.5, 3, -0.25}), CT_SHAPE(3),      \
                                     .requires_grad = true);                        \
        double total = 0;                                                           \
        (void)t, (void)x, (void)a, (void)b, (void)total;                            \
        {
#define CT_DOC_EXAMPLE_END                                                          \
        }                                                                           \
    }                                                                               \
    return ct_doc_finish();                                                         \
    }

#endif
