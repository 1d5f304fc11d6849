/* Op schemas (ctorch/ops.h): the rows of ops/schema.def, parsed once from PyTorch's
 * schema language into inputs, attributes and outputs. */
#include <pthread.h>
#include <string.h>

#include "ctorch/ops.h"
#include "core/error.h"
#include "ops/op_table.h"
#include "ops/schema_parse.h"

/* The build checks that schema.def has exactly one row per op: a duplicate row is a
 * duplicate enumerator here, a row naming no op an undeclared CT_OP_ below, and a
 * missing row fails the count. */
enum {
#define CT_SCHEMA(name, text) CT_SCHEMA_ROW_##name,
#include "ops/schema.def"
#undef CT_SCHEMA
    CT_NUM_SCHEMA_ROWS
};
_Static_assert((int)CT_NUM_SCHEMA_ROWS == (int)CT_NUM_OPS,
               "src/ops/schema.def needs one CT_SCHEMA row per op of src/ops/ops.def");

static const char *const texts[CT_NUM_OPS] = {
#define CT_SCHEMA(name, text) [CT_OP_##name] = text,
#include "ops/schema.def"
#undef CT_SCHEMA
};

static ct_schema schemas[CT_NUM_OPS];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void parse(int op) {
    ct_schema *s = &schemas[op];
    s->op = op;
    s->name = ct_ops[op].name;
    s->grad_fn = ct_ops[op].grad_name;
    const char *why = ct_schema_parse(texts[op], s);
    if (why)
        ct_fatal("src/ops/schema.def: the schema of %s (\"%s\"): %s", ct_ops[op].name,
                 texts[op], why);
}

static void parse_all(void) {
    for (int op = 0; op < CT_NUM_OPS; op++) parse(op);
}

int ct_num_ops(void) { return CT_NUM_OPS; }

const ct_schema *ct_schema_of(ct_op_id op) {
    pthread_once(&once, parse_all);
    return &schemas[op];
}

const ct_schema *ct_op_schema(int op) {
    if (op < 0 || op >= CT_NUM_OPS) {
        ct_error("ct_op_schema: op %d is out of range [0, %d)", op, CT_NUM_OPS);
        return NULL;
    }
    return ct_schema_of((ct_op_id)op);
}

const ct_schema *ct_op_schema_find(const char *name) {
    if (!name) {
        ct_error("ct_op_schema_find: name is NULL");
        return NULL;
    }
    for (int op = 0; op < CT_NUM_OPS; op++)
        if (!strcmp(ct_ops[op].name, name)) return ct_schema_of((ct_op_id)op);
    ct_error("ct_op_schema_find: no op is named \"%s\"", name);
    return NULL;
}
