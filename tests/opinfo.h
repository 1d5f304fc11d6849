/* OpInfo: tests as data.  tests/opinfo.def holds one row per op of src/ops/ops.def:
 * the dtypes it is tested in, what its samples are checked for, and the tolerance of
 * its reduced-precision runs.  The samples (tests/gradcheck/<family>.c) name their op;
 * the row decides which generic checks each sample gets (tests/gradcheck/gc.c), and
 * the suite refuses an op or a kernel slot without a row (tests/gradcheck/coverage.c).
 * tests/fixtures/opinfo.py reads the same file for the fixture generators.
 *
 *     const oi_row *r = oi_row_of("add");
 *     if (r && (r->flags & OI_GRADGRAD)) ...        // its samples may ask gradgradcheck
 *     if (oi_has_dtype(r, CT_BF16)) ...             // bfloat16 runs against float32
 */
#ifndef CT_TEST_OPINFO_H
#define CT_TEST_OPINFO_H

#include <stdbool.h>

#include "ctorch.h"

/* The flags of a row (the FLAGS column of opinfo.def, written without the OI_ prefix). */
enum {
    OI_GRAD = 1 << 0,         /* differentiable: its samples are gradchecked */
    OI_GRADGRAD = 1 << 1,     /* second order too: some sample asks gradgradcheck */
    OI_NO_META = 1 << 2,      /* skip the meta-device check (reason required) */
    OI_NO_THREADS = 1 << 3,   /* skip 1-vs-3-threads bitwise equality (reason required) */
    OI_NO_NONCONTIG = 1 << 4, /* skip the non-contiguous-input check (reason required) */
    OI_NO_LOWP = 1 << 5,      /* skip the reduced-precision runs (reason required) */
    OI_ELSEWHERE = 1 << 6,    /* no sample here; the reason names the test that covers it */
    OI_EXEMPT = 1 << 7,       /* no generic checks apply (autograd plumbing); reason required */
    OI_NO_LARGE = 1 << 8,     /* no OPLARGE sample (reason required) */
    OI_NO_EMPTY = 1 << 9,     /* skip the size-0 and size-1 variants (reason required) */
};

typedef struct {
    const char *op;     /* the ops.def name */
    const char *dtypes; /* names as ct_dtype_name gives them, or floating / integral / all */
    unsigned flags;
    double ulps;        /* reduced-precision tolerance in units of the dtype's epsilon (0: 8) */
    const char *reason; /* why a check is skipped (empty when nothing is) */
    int line;           /* its line in tests/opinfo.def */
} oi_row;

/* An OPEMPTY row: what PyTorch gives for op's samples on a size-0 batch. */
typedef struct {
    const char *op;
    const char *value;    /* every element of the result, as strtod reads it; "" any */
    const char *fragment; /* a size-0 or size-1 variant may fail with this; "" never */
    int line;
} oi_empty;

extern const oi_row oi_rows[];
extern const oi_empty oi_empties[];
extern const int oi_num_empties;
extern const int oi_num_rows;

/* The row of op `name`, NULL when opinfo.def has none. */
const oi_row *oi_row_of(const char *name);
/* The OPEMPTY row of op `name`, NULL when opinfo.def has none. */
const oi_empty *oi_empty_of(const char *name);
/* Whether the row's dtypes name dt (directly or through a group). */
bool oi_has_dtype(const oi_row *r, ct_dtype dt);
/* Checks the dtypes column: false, naming the token, on an unknown one. */
bool oi_dtypes_valid(const oi_row *r, char *bad, size_t bad_size);

#endif
