#include <string.h>

#include "opinfo.h"

enum {
    GRAD = OI_GRAD,
    GRADGRAD = OI_GRADGRAD,
    NO_META = OI_NO_META,
    NO_THREADS = OI_NO_THREADS,
    NO_NONCONTIG = OI_NO_NONCONTIG,
    NO_LOWP = OI_NO_LOWP,
    ELSEWHERE = OI_ELSEWHERE,
    EXEMPT = OI_EXEMPT,
    NO_LARGE = OI_NO_LARGE,
    NO_EMPTY = OI_NO_EMPTY,
};

const oi_row oi_rows[] = {
#define OPINFO(op, dtypes, flags, ulps, reason) {#op, dtypes, (flags), (ulps), reason, __LINE__},
#include "opinfo.def"
#undef OPINFO
};
const int oi_num_rows = (int)(sizeof oi_rows / sizeof oi_rows[0]);

const oi_empty oi_empties[] = {
#define OPEMPTY(op, value, fragment) {#op, value, fragment, __LINE__},
#include "opinfo.def"
#undef OPEMPTY
    {NULL, NULL, NULL, 0},
};
const int oi_num_empties = (int)(sizeof oi_empties / sizeof oi_empties[0]) - 1;

const oi_empty *oi_empty_of(const char *name) {
    for (int i = 0; i < oi_num_empties; i++)
        if (!strcmp(oi_empties[i].op, name)) return &oi_empties[i];
    return NULL;
}

const oi_row *oi_row_of(const char *name) {
    for (int i = 0; i < oi_num_rows; i++)
        if (!strcmp(oi_rows[i].op, name)) return &oi_rows[i];
    return NULL;
}

static const struct {
    const char *name;
    const ct_dtype dt[6];
} GROUPS[] = {
    {"floating", {CT_F32, CT_F64, CT_F16, CT_BF16}},
    {"integral", {CT_U8, CT_I8, CT_I16, CT_I32, CT_I64}},
};

/* Whether token tok (len n) names dt; *known tells whether it names anything. */
static bool token_has(const char *tok, size_t n, ct_dtype dt, bool *known) {
    *known = true;
    if (n == 3 && !strncmp(tok, "all", 3)) {
        bool k;
        return dt == CT_BOOL || token_has("floating", 8, dt, &k) ||
               token_has("integral", 8, dt, &k);
    }
    for (size_t g = 0; g < sizeof GROUPS / sizeof GROUPS[0]; g++)
        if (strlen(GROUPS[g].name) == n && !strncmp(tok, GROUPS[g].name, n)) {
            for (int k = 0; k < 6 && GROUPS[g].dt[k]; k++)
                if (GROUPS[g].dt[k] == dt) return true;
            return false;
        }
    for (int d = 1; d < CT_NUM_DTYPES; d++) {
        const char *name = ct_dtype_name((ct_dtype)d);
        if (strlen(name) == n && !strncmp(tok, name, n)) return d == (int)dt;
    }
    *known = false;
    return false;
}

/* Calls visit on each space-separated token; stops when it returns true. */
static bool each_token(const char *s, bool (*visit)(const char *, size_t, void *), void *ctx) {
    while (*s) {
        while (*s == ' ') s++;
        size_t n = strcspn(s, " ");
        if (n && visit(s, n, ctx)) return true;
        s += n;
    }
    return false;
}

typedef struct {
    ct_dtype dt;
    char *bad;
    size_t bad_size;
} token_ctx;

static bool names_dtype(const char *tok, size_t n, void *c) {
    bool known;
    return token_has(tok, n, ((token_ctx *)c)->dt, &known);
}

bool oi_has_dtype(const oi_row *r, ct_dtype dt) {
    token_ctx c = {dt, NULL, 0};
    return r && each_token(r->dtypes, names_dtype, &c);
}

static bool unknown_token(const char *tok, size_t n, void *c) {
    bool known;
    token_has(tok, n, CT_F32, &known);
    token_ctx *t = c;
    if (!known) snprintf(t->bad, t->bad_size, "%.*s", (int)n, tok);
    return !known;
}

bool oi_dtypes_valid(const oi_row *r, char *bad, size_t bad_size) {
    token_ctx c = {CT_F32, bad, bad_size};
    return !each_token(r->dtypes, unknown_token, &c);
}
