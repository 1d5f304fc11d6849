/* The schema language's parser (ops/schema_parse.h). */
#include <ctype.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "ops/schema_parse.h"

#define MAX_ARGS 24

typedef struct {
    jmp_buf fail;
    const char *why;
} parser;

static _Noreturn void bad(parser *ps, const char *why) {
    ps->why = why;
    longjmp(ps->fail, 1);
}

static char *dup_range(parser *ps, const char *a, const char *b) {
    while (a < b && isspace((unsigned char)*a)) a++;
    while (b > a && isspace((unsigned char)b[-1])) b--;
    char *s = malloc((size_t)(b - a) + 1);
    if (!s) bad(ps, "out of memory");
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

/* Parses a type ("int[2]", "Tensor(a!)?", "Tensor?[]") into a. */
static void parse_type(parser *ps, char *type, ct_schema_arg *a) {
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
    if (base < 0) bad(ps, "unknown type");
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
            if ((int)bases[base].list < 0) bad(ps, "a list of a type that has none");
            a->kind = bases[base].list;
            a->list_len = atoi(p + 1);
            p = strchr(p, ']');
            if (!p) bad(ps, "unclosed [");
        } else {
            bad(ps, "unexpected character in a type");
        }
    }
}

/* Parses one argument or return ("Tensor self", "Scalar alpha=1", "Tensor"). */
static void parse_arg(parser *ps, const char *a, const char *b, ct_schema_arg *out,
                      bool is_return) {
    char *s = dup_range(ps, a, b);
    char *sp = (char *)item_end(s, ' ');
    char *name = "";
    if (*sp) {
        *sp = 0;
        name = sp + 1;
        while (*name == ' ') name++;
    } else if (!is_return) {
        bad(ps, "an argument without a name");
    }
    char *eq = strchr(name, '=');
    if (eq) {
        if (is_return) bad(ps, "a return with a default");
        *eq = 0;
        out->default_value = eq + 1;
    }
    out->name = name;
    parse_type(ps, s, out);
}

static void parse(parser *ps, const char *t, ct_schema *s) {
    s->signature = t;
    const char *open = strchr(t, '(');
    const char *arrow = strstr(t, ") -> ");
    if (!open || !arrow) bad(ps, "expected \"name(args) -> returns\"");
    s->aten_name = dup_range(ps, t, open);

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
            parse_arg(ps, p, e, &a, false);
            a.kwarg_only = kwarg_only;
            bool tensor = a.kind == CT_ARG_TENSOR || a.kind == CT_ARG_TENSOR_LIST;
            if ((tensor ? n_in : n_attrs) == MAX_ARGS) bad(ps, "too many arguments");
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
            if (n_out == MAX_ARGS) bad(ps, "too many returns");
            parse_arg(ps, p, e, &outs[n_out++], true);
            p = e + 1;
        }
    } else {
        parse_arg(ps, r, r + rl, &outs[n_out++], true);
    }
    for (int i = 0; i < n_out; i++)
        if (outs[i].kind != CT_ARG_TENSOR && outs[i].kind != CT_ARG_TENSOR_LIST)
            bad(ps, "a return that is not a tensor");
    ct_schema_arg *all = malloc(sizeof(ct_schema_arg) * (size_t)(n_in + n_attrs + n_out + 1));
    if (!all) bad(ps, "out of memory");
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

const char *ct_schema_parse(const char *text, ct_schema *s) {
    parser ps = {.why = NULL};
    if (setjmp(ps.fail)) return ps.why;
    parse(&ps, text, s);
    return NULL;
}
