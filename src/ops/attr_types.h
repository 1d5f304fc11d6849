/* The C types of op attributes, and the description of a generated attribute struct.
 *
 * tools/gen_attrs.c reads src/ops/schema.def at build time and writes ops/attrs.h: one
 * struct per op with attributes, its fields named and ordered as the schema's, typed:
 *
 *     Scalar, float -> double           Scalar?, float? -> ct_attr_opt_float
 *     int, SymInt   -> int64_t          int?, SymInt?   -> ct_attr_opt_int
 *     bool -> bool    ScalarType(?) -> ct_dtype (CT_DTYPE_UNSET: None)
 *     str(?) -> const char * (NULL: None)   Device? -> ct_device (CT_DEV_UNSET: None)
 *     Generator? -> ct_generator * (never shown: the record hook reports None)
 *     int[2] -> ct_attr_ints2 {n, d[2]}    int[], int[1], SymInt[] -> ct_dims (n < 0: None)
 *     float[] -> ct_attr_floats {n, d[CT_MAX_DIMS]} (n < 0: None)
 *     bool[], bool[3] -> ct_attr_bools {n, d[CT_MAX_DIMS]}
 *
 *     typedef struct { double alpha; } ct_add_attrs;        // add(self, other, *, alpha=1)
 *     node->attrs.add = (ct_add_attrs){alpha};              // the forward
 *     double alpha = node->attrs.add.alpha;                 // its backward
 *     CT_TRACE_ATTRS(CT_OP_add, 2, in, 1, &out, &node->attrs.add);
 *
 * ct_op_attrs, the union of those structs held by every graph node, has a member for
 * each op whose struct is at most CT_NODE_ATTRS_MAX bytes; ct_attrs_info_of (the
 * generated ops/attrs.c) describes every op's struct field by field, so that the record
 * hook turns one into its list of ct_value without knowing the op. */
#ifndef CT_OPS_ATTR_TYPES_H
#define CT_OPS_ATTR_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "ctorch/base.h"
#include "ctorch/ops.h"

/* The largest attribute struct a graph node holds inline (see ct_node). */
#define CT_NODE_ATTRS_MAX 112

typedef struct { bool some; int64_t v; } ct_attr_opt_int;   /* some == false: None */
typedef struct { bool some; double v; } ct_attr_opt_float;  /* some == false: None */
typedef struct { int n; double d[CT_MAX_DIMS]; } ct_attr_floats;
typedef struct { int n; bool d[CT_MAX_DIMS]; } ct_attr_bools;

/* How a field is stored (the generator's choice for each schema type above). */
typedef enum {
    CT_ATTR_INT,       /* int64_t */
    CT_ATTR_OPT_INT,   /* ct_attr_opt_int */
    CT_ATTR_FLOAT,     /* double */
    CT_ATTR_OPT_FLOAT, /* ct_attr_opt_float */
    CT_ATTR_BOOL,      /* bool */
    CT_ATTR_DTYPE,     /* ct_dtype */
    CT_ATTR_STR,       /* const char * */
    CT_ATTR_DEVICE,    /* ct_device */
    CT_ATTR_GENERATOR, /* ct_generator * */
    CT_ATTR_INTS,      /* {int n; int64_t d[cap];}: ct_dims or ct_attr_ints<cap> */
    CT_ATTR_FLOATS,    /* ct_attr_floats */
    CT_ATTR_BOOLS,     /* ct_attr_bools */
} ct_attr_storage;

typedef struct {
    const char *name;     /* the schema's name of the attribute */
    ct_arg_type kind;     /* the schema's kind */
    ct_attr_storage storage;
    uint16_t offset;      /* offsetof in the op's struct */
    uint16_t cap;         /* lists: the most elements the field holds */
} ct_attr_field;

typedef struct {
    int n_fields;                /* the schema's n_attrs */
    const ct_attr_field *fields; /* in schema order */
    size_t size;                 /* sizeof the struct; 0 for an op without attributes */
    bool in_node;                /* a member of ct_op_attrs (node->attrs.<op>) */
} ct_attrs_info;

#endif
