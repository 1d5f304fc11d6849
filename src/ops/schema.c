/* Op schemas (ctorch/ops.h): the rows of ops/schema.def, parsed once from PyTorch's
 * schema language into inputs, attributes and outputs. */
#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch/ops.h"
#include "core/error.h"
#include "ops/op_table.h"

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

#define MAX_ARGS 24

static ct_schema schemas[CT_NUM_OPS];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static char *dup_range(const char *a, const char *b) {
    while (a < b && isspace((unsigned char)*a)) a++;
    while (b > a && isspace((unsigned char)b[-1])) b--;
    char *s = malloc((size_t)(b - a) + 1);
    if (!s) ct_fatal("out of memory parsing op schemas");
    memcpy(s, a, (size_t)(b - a));
    s[b - a] = 0;
    return s;
}

/* The end of the item starting at p: the next `stop` character outside brackets,
 * parentheses and quotes (or the string's end). */
static const char *item_end(const char *p, char stop) {
    int depth = 0;
    bool quoted = false;
    for (; *p; p++) {
        if (*p == '\'') quoted = !quoted;
        if (quoted) continue;
        if (*p == '(' || *p == '[') depth++;
        else if (*p == ')' || *p == ']') depth--;
        else if (*p == stop && depth == 0) break;
        if (depth < 0) break;
    }
    return p;
}

static void bad(int op, const char *why) {
    ct_fatal("src/ops/schema.def: the schema of %s (\"%s\"): %s", ct_ops[op].name, texts[op],
             why);
}

/* Parses a type ("int[2]", "Tensor(a!)?", "Tensor?[]") into a. */
static void parse_type(int op, char *type, ct_schema_arg *a) {
    static const struct { const char *name; ct_arg_type kind, list; } bases[] = {
        {"Tensor", CT_ARG_TENSOR, CT_ARG_TENSOR_LIST}, {"int", CT_ARG_INT, CT_ARG_INT_LIST},
        {"SymInt", CT_ARG_INT, CT_ARG_INT_LIST},       {"float", CT_ARG_FLOAT, CT_ARG_FLOAT_LIST},
        {"bool", CT_ARG_BOOL, CT_ARG_BOOL_LIST},       {"Scalar", CT_ARG_SCALAR, -1},
        {"ScalarType", CT_ARG_DTYPE, -1},              {"str", CT_ARG_STR, -1},
        {"Device", CT_ARG_DEVICE, -1},                 {"Generator", CT_ARG_GENERATOR, -1},
    };
    a->type = type;
    size_t n = 0;
    while (isalpha((unsigned char)type[n])) n++;
    int base = -1;
    for (int i = 0; i < (int)(sizeof bases / sizeof bases[0]); i++)
        if (strlen(bases[i].name) == n && !strncmp(type, bases[i].name, n)) base = i;
    if (base < 0) bad(op, "unknown type");
    a->kind = bases[base].kind;
    const char *p = type + n;
    if (*p == '(') { /* alias annotation: (a), (a!), (a -> *) */
        const char *e = item_end(p + 1, ')');
        a->is_mutable = memchr(p, '!', (size_t)(e - p)) != NULL;
        p = *e ? e + 1 : e;
    }
    for (; *p; p++) {
        if (*p == '?') {
            a->optional = p[1] == 0; /* Tensor?[]: the list's elements, not the list */
        } else if (*p == '[') {
            if ((int)bases[base].list < 0) bad(op, "a list of a type that has none");
            a->kind = bases[base].list;
            a->list_len = atoi(p + 1);
            p = strchr(p, ']');
            if (!p) bad(op, "unclosed [");
        } else {
            bad(op, "unexpected character in a type");
        }
    }
}

/* Parses one argument or return ("Tensor self", "Scalar alpha=1", "Tensor"). */
static void parse_arg(int op, const char *a, const char *b, ct_schema_arg *out, bool is_return) {
    char *s = dup_range(a, b);
    char *sp = (char *)item_end(s, ' ');
    char *name = "";
    if (*sp) {
        *sp = 0;
        name = sp + 1;
        while (*name == ' ') name++;
    } else if (!is_return) {
        bad(op, "an argument without a name");
    }
    char *eq = strchr(name, '=');
    if (eq) {
        if (is_return) bad(op, "a return with a default");
        *eq = 0;
        out->default_value = eq + 1;
    }
    out->name = name;
    parse_type(op, s, out);
}

static void parse(int op) {
    const char *t = texts[op];
    ct_schema *s = &schemas[op];
    s->op = op;
    s->name = ct_ops[op].name;
    s->grad_fn = ct_ops[op].grad_name;
    s->signature = t;
    const char *open = strchr(t, '(');
    const char *arrow = strstr(t, ") -> ");
    if (!open || !arrow) bad(op, "expected \"name(args) -> returns\"");
    s->aten_name = dup_range(t, open);

    ct_schema_arg in[MAX_ARGS], attrs[MAX_ARGS], outs[MAX_ARGS];
    int n_in = 0, n_attrs = 0, n_out = 0;
    bool kwarg_only = false;
    for (const char *p = open + 1; p < arrow;) {
        const char *e = item_end(p, ',');
        if (e > arrow) e = arrow;
        const char *q = p;
        while (isspace((unsigned char)*q)) q++;
        if (*q == '*') {
            kwarg_only = true;
        } else if (q < e) {
            ct_schema_arg a = {0};
            parse_arg(op, p, e, &a, false);
            a.kwarg_only = kwarg_only;
            bool tensor = a.kind == CT_ARG_TENSOR || a.kind == CT_ARG_TENSOR_LIST;
            if ((tensor ? n_in : n_attrs) == MAX_ARGS) bad(op, "too many arguments");
            if (tensor) in[n_in++] = a;
            else attrs[n_attrs++] = a;
        }
        p = *e == ',' ? e + 1 : e + (e < arrow ? 0 : 1);
        if (e == arrow) break;
    }
    const char *r = arrow + 5;
    size_t rl = strlen(r);
    if (rl >= 2 && r[0] == '(' && r[rl - 1] == ')') { /* (), (Tensor values, Tensor indices) */
        for (const char *p = r + 1; p < r + rl - 1;) {
            const char *e = item_end(p, ',');
            if (e > r + rl - 1) e = r + rl - 1;
            if (n_out == MAX_ARGS) bad(op, "too many returns");
            parse_arg(op, p, e, &outs[n_out++], true);
            p = e + 1;
        }
    } else {
        parse_arg(op, r, r + rl, &outs[n_out++], true);
    }
    for (int i = 0; i < n_out; i++)
        if (outs[i].kind != CT_ARG_TENSOR && outs[i].kind != CT_ARG_TENSOR_LIST)
            bad(op, "a return that is not a tensor");
    ct_schema_arg *all = malloc(sizeof(ct_schema_arg) * (size_t)(n_in + n_attrs + n_out + 1));
    if (!all) ct_fatal("out of memory parsing op schemas");
    memcpy(all, in, sizeof(ct_schema_arg) * (size_t)n_in);
    memcpy(all + n_in, attrs, sizeof(ct_schema_arg) * (size_t)n_attrs);
    memcpy(all + n_in + n_attrs, outs, sizeof(ct_schema_arg) * (size_t)n_out);
    s->inputs = all;
    s->attrs = all + n_in;
    s->outputs = all + n_in + n_attrs;
    s->n_inputs = n_in;
    s->n_attrs = n_attrs;
    s->n_outputs = n_out;
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
