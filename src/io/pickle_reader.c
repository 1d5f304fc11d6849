/* The restricted unpickler (io/pickle.h).
 *
 * The input is hostile: every length is checked against the bytes left, memo indices
 * against the memo, the stack and marks against what was pushed.  Nothing is trusted
 * to be small except through those checks, and containers nest at most PK_MAX_DEPTH
 * deep, so freeing or walking a loaded tree never recurses without bound.
 *
 * Note [No cycles]: a container the unpickler places inside another is sealed: it
 * takes no more items.  Python's pickler finishes each container before its parent
 * takes it (only a self-referencing object does otherwise), so real files never touch
 * a sealed one, and a cycle cannot form: its last edge would add an item to a
 * container already sealed by the first.  A container's height is therefore final
 * once sealed, and its parent's height is computed from it as items arrive.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/pickle.h"
#include "io/json.h"
#include "core/error.h"
#include "core/mem.h"

void pk_error(const char *where, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ct_error("%s: %s", where, msg);
}

typedef struct {
    const unsigned char *p, *start, *end;
    const pk_hooks *h;
    const char *where;
    ct_pt_value **stack;
    size_t sp, stack_cap;
    size_t *marks;
    size_t nmarks, marks_cap;
    ct_pt_value **memo;
    size_t memo_cap, memo_n; /* memo_n: the entries set (MEMOIZE's next index) */
} vm;

static bool fail(vm *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(vm *m, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ct_error("%s: %s (at byte %zu of the pickle)", m->where, msg, (size_t)(m->p - m->start));
    return false;
}

static bool grow(vm *m, void **arr, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return true;
    size_t c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    void *a = ct_realloc(*arr, c * elem);
    if (!a) return fail(m, "out of memory");
    memset((char *)a + *cap * elem, 0, (c - *cap) * elem);
    *arr = a;
    *cap = c;
    return true;
}

/* Pushes v, taking its reference (a NULL v is the error its maker set). */
static bool push(vm *m, ct_pt_value *v) {
    if (!v) return false;
    if (!grow(m, (void **)&m->stack, &m->stack_cap, m->sp + 1, sizeof *m->stack)) {
        ct_object_release(v);
        return false;
    }
    m->stack[m->sp++] = v;
    return true;
}

/* The stack's top after the last mark, as the base of what a mark-taking opcode reads. */
static bool mark_base(vm *m, size_t *base) {
    if (!m->nmarks) return fail(m, "an opcode needs a MARK and there is none");
    *base = m->marks[--m->nmarks];
    return true;
}

/* The stack's bottom as the current mark sees it. */
static size_t floor_of(const vm *m) { return m->nmarks ? m->marks[m->nmarks - 1] : 0; }

static bool need(vm *m, size_t nitems) {
    return m->sp - floor_of(m) >= nitems || fail(m, "the stack holds too few items for the opcode");
}

static void pop_to(vm *m, size_t base) {
    while (m->sp > base) ct_object_release(m->stack[--m->sp]);
}

static bool take(vm *m, size_t n, const unsigned char **out) {
    *out = m->p;
    if ((size_t)(m->end - m->p) < n) return fail(m, "the pickle is cut short (%zu more bytes expected)", n);
    m->p += n;
    return true;
}

static uint64_t le(const unsigned char *b, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | b[i];
    return v;
}

/* Places item in container (Note [No cycles]). */
static bool put_in(vm *m, ct_pt_value *c, ct_pt_value *item) {
    if (item == c) return fail(m, "a container is placed inside itself (cyclic data is not supported)");
    if (c->sealed) return fail(m, "a container is changed after it was placed in another (cyclic data is not supported)");
    if (item->height >= PK_MAX_DEPTH) return fail(m, "containers nest deeper than %d levels", PK_MAX_DEPTH);
    if (item->height + 1 > c->height) c->height = (uint16_t)(item->height + 1);
    c->opaque |= item->opaque || item->kind == PT_STORAGE || item->kind == PT_GLOBAL;
    item->sealed = true;
    return true;
}

static bool valid_key(vm *m, const ct_pt_value *k) {
    switch (k->kind) {
    case CT_PT_STR: case CT_PT_BYTES: case CT_PT_INT: case CT_PT_BOOL: case CT_PT_NONE: return true;
    default: return fail(m, "a dict key of type %s is not supported", ct_pt_kind_name(ct_pt_kind_of(k)));
    }
}

/* stack[from..sp) as key, value pairs into the dict below them... or given d. */
static bool set_items(vm *m, ct_pt_value *d, size_t from) {
    if ((m->sp - from) % 2) return fail(m, "SETITEMS has an odd number of items");
    if (d->kind != CT_PT_DICT) return fail(m, "SETITEM on a %s (only dicts take items)", ct_pt_kind_name(ct_pt_kind_of(d)));
    for (size_t i = from; i < m->sp; i += 2)
        if (!valid_key(m, m->stack[i]) || !put_in(m, d, m->stack[i]) || !put_in(m, d, m->stack[i + 1]) ||
            !pt_dict_put(d, m->stack[i], m->stack[i + 1], "ct_load_pt"))
            return false;
    pop_to(m, from);
    return true;
}

static bool append_items(vm *m, ct_pt_value *l, size_t from) {
    if (l->kind != CT_PT_LIST) return fail(m, "APPEND on a %s (only lists take items)", ct_pt_kind_name(ct_pt_kind_of(l)));
    for (size_t i = from; i < m->sp; i++)
        if (!put_in(m, l, m->stack[i]) || !pt_push(l, NULL, m->stack[i], "ct_load_pt")) return false;
    pop_to(m, from);
    return true;
}

/* A new tuple or list of stack[from..sp), replacing them. */
static bool collect(vm *m, int kind, size_t from) {
    ct_pt_value *t = pt_new(kind, "ct_load_pt");
    if (!t) return false;
    for (size_t i = from; i < m->sp; i++)
        if (!put_in(m, t, m->stack[i]) || !pt_push(t, NULL, m->stack[i], "ct_load_pt")) {
            ct_object_release(t);
            return false;
        }
    pop_to(m, from);
    return push(m, t);
}

static bool string_op(vm *m, int kind, size_t len_bytes) {
    const unsigned char *b, *s;
    if (!take(m, len_bytes, &b)) return false;
    uint64_t n = le(b, (int)len_bytes);
    if (n > (uint64_t)(m->end - m->p)) return fail(m, "a string of %llu bytes runs past the end", (unsigned long long)n);
    take(m, (size_t)n, &s);
    if (kind == CT_PT_STR)
        for (const unsigned char *q = s; q < s + n;) {
            int k = utf8_len(q, s + n);
            if (!k) return fail(m, "a string is not valid UTF-8");
            q += k;
        }
    return push(m, pt_new_str(kind, (const char *)s, (size_t)n, "ct_load_pt"));
}

static bool int_op(vm *m, int nbytes, bool is_signed) {
    const unsigned char *b;
    if (!take(m, (size_t)nbytes, &b)) return false;
    uint64_t u = le(b, nbytes);
    int64_t v = (int64_t)u;
    if (is_signed && nbytes < 8 && (u >> (8 * nbytes - 1)) & 1) v = (int64_t)(u | ~((UINT64_C(1) << (8 * nbytes)) - 1));
    ct_pt_value *x = pt_new(CT_PT_INT, "ct_load_pt");
    if (x) x->i = v;
    return push(m, x);
}

/* LONG1 / LONG4: a little-endian two's complement integer of n bytes (at most 8). */
static bool long_op(vm *m, size_t len_bytes) {
    const unsigned char *b;
    if (!take(m, len_bytes, &b)) return false;
    uint64_t n = le(b, (int)len_bytes);
    if (n > 8) return fail(m, "an integer of %llu bytes does not fit 64 bits", (unsigned long long)n);
    if (n == 0) return int_op(m, 0, false);
    return int_op(m, (int)n, true);
}

static bool global_line(vm *m, char *out, size_t cap) {
    const unsigned char *nl = memchr(m->p, '\n', (size_t)(m->end - m->p));
    if (!nl) return fail(m, "GLOBAL's name has no end");
    size_t n = (size_t)(nl - m->p);
    if (n >= cap) return fail(m, "GLOBAL's name is longer than %zu bytes", cap - 1);
    memcpy(out, m->p, n);
    out[n] = 0;
    if (strlen(out) != n) return fail(m, "GLOBAL's name holds a NUL byte");
    m->p = nl + 1;
    return true;
}

static bool memo_put(vm *m, uint64_t idx) {
    if (!m->sp) return fail(m, "BINPUT with an empty stack");
    /* Python's pickler numbers its memo from 0 up, one entry per opcode at most. */
    if (idx > (uint64_t)(m->end - m->start)) return fail(m, "memo index %llu is out of range", (unsigned long long)idx);
    if (!grow(m, (void **)&m->memo, &m->memo_cap, (size_t)idx + 1, sizeof *m->memo)) return false;
    if (m->memo[idx]) ct_object_release(m->memo[idx]);
    else m->memo_n++;
    m->memo[idx] = ct_retain(m->stack[m->sp - 1]);
    return true;
}

static bool memo_get(vm *m, uint64_t idx) {
    if (idx >= m->memo_cap || !m->memo[idx]) return fail(m, "memo index %llu was never stored", (unsigned long long)idx);
    return push(m, ct_retain(m->memo[idx]));
}

static const char *opcode_name(unsigned char op) {
    static const struct { unsigned char op; const char *name; } names[] = {
        {'i', "INST"}, {'o', "OBJ"}, {0x81, "NEWOBJ"}, {0x92, "NEWOBJ_EX"}, {0x82, "EXT1"}, {0x83, "EXT2"},
        {0x84, "EXT4"}, {'P', "PERSID"}, {'S', "STRING"}, {'V', "UNICODE"}, {'F', "FLOAT"}, {'L', "LONG"},
        {'I', "INT"}, {'g', "GET"}, {'p', "PUT"}, {0x8f, "EMPTY_SET"}, {0x90, "ADDITEMS"}, {0x91, "FROZENSET"},
        {0x96, "BYTEARRAY8"}, {0x97, "NEXT_BUFFER"}, {0x98, "READONLY_BUFFER"},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (names[i].op == op) return names[i].name;
    return "unknown";
}

/* Runs one opcode; *stop set at STOP. */
static bool step(vm *m, bool *stop) {
    const unsigned char *b;
    if (!take(m, 1, &b)) return false;
    unsigned char op = *b;
    size_t base = 0;
    ct_pt_value *v;
    switch (op) {
    case 0x80: /* PROTO */
        if (!take(m, 1, &b)) return false;
        return *b <= 5 || fail(m, "pickle protocol %d is newer than 5", *b);
    case 0x95: return take(m, 8, &b); /* FRAME: a hint for buffered readers */
    case '.': /* STOP */
        if (m->sp != 1 || m->nmarks) return fail(m, "STOP with %zu items on the stack (expected 1)", m->sp);
        *stop = true;
        return true;
    case '(': /* MARK */
        if (!grow(m, (void **)&m->marks, &m->marks_cap, m->nmarks + 1, sizeof *m->marks)) return false;
        m->marks[m->nmarks++] = m->sp;
        return true;
    case '0': /* POP */
        if (m->nmarks && m->marks[m->nmarks - 1] == m->sp) { m->nmarks--; return true; }
        if (!need(m, 1)) return false;
        pop_to(m, m->sp - 1);
        return true;
    case '1': /* POP_MARK */
        if (!mark_base(m, &base)) return false;
        pop_to(m, base);
        return true;
    case '2': /* DUP */
        return need(m, 1) && push(m, ct_retain(m->stack[m->sp - 1]));
    case 'N': return push(m, pt_new(CT_PT_NONE, "ct_load_pt"));
    case 0x88:
    case 0x89: /* NEWTRUE, NEWFALSE */
        if (!(v = pt_new(CT_PT_BOOL, "ct_load_pt"))) return false;
        v->b = op == 0x88;
        return push(m, v);
    case 'J': return int_op(m, 4, true);  /* BININT */
    case 'K': return int_op(m, 1, false); /* BININT1 */
    case 'M': return int_op(m, 2, false); /* BININT2 */
    case 0x8a: return long_op(m, 1);      /* LONG1 */
    case 0x8b: return long_op(m, 4);      /* LONG4 */
    case 'G': { /* BINFLOAT: big-endian double */
        if (!take(m, 8, &b)) return false;
        uint64_t u = 0;
        for (int i = 0; i < 8; i++) u = u << 8 | b[i];
        if (!(v = pt_new(CT_PT_FLOAT, "ct_load_pt"))) return false;
        memcpy(&v->f, &u, 8);
        return push(m, v);
    }
    case 'X': return string_op(m, CT_PT_STR, 4);   /* BINUNICODE */
    case 0x8c: return string_op(m, CT_PT_STR, 1);  /* SHORT_BINUNICODE */
    case 0x8d: return string_op(m, CT_PT_STR, 8);  /* BINUNICODE8 */
    case 'U': return string_op(m, CT_PT_STR, 1);   /* SHORT_BINSTRING (Python 2's str) */
    case 'T': return string_op(m, CT_PT_STR, 4);   /* BINSTRING */
    case 'C': return string_op(m, CT_PT_BYTES, 1); /* SHORT_BINBYTES */
    case 'B': return string_op(m, CT_PT_BYTES, 4); /* BINBYTES */
    case 0x8e: return string_op(m, CT_PT_BYTES, 8); /* BINBYTES8 */
    case ')': return push(m, pt_new(CT_PT_TUPLE, "ct_load_pt")); /* EMPTY_TUPLE */
    case ']': return push(m, pt_new(CT_PT_LIST, "ct_load_pt"));  /* EMPTY_LIST */
    case '}': return push(m, pt_new(CT_PT_DICT, "ct_load_pt"));  /* EMPTY_DICT */
    case 't': return mark_base(m, &base) && collect(m, CT_PT_TUPLE, base); /* TUPLE */
    case 'l': return mark_base(m, &base) && collect(m, CT_PT_LIST, base);  /* LIST */
    case 0x85:
    case 0x86:
    case 0x87: /* TUPLE1, TUPLE2, TUPLE3 */
        return need(m, (size_t)(op - 0x84)) && collect(m, CT_PT_TUPLE, m->sp - (size_t)(op - 0x84));
    case 'd': /* DICT */
        if (!mark_base(m, &base) || !push(m, pt_new(CT_PT_DICT, "ct_load_pt"))) return false;
        v = m->stack[--m->sp]; /* the new dict, taken off while the items go in */
        if (!set_items(m, v, base)) {
            ct_object_release(v);
            return false;
        }
        return push(m, v);
    case 's': /* SETITEM */
        return need(m, 3) && set_items(m, m->stack[m->sp - 3], m->sp - 2);
    case 'u': /* SETITEMS */
        return mark_base(m, &base) && (base > floor_of(m) || fail(m, "SETITEMS without a dict")) &&
               set_items(m, m->stack[base - 1], base);
    case 'a': /* APPEND */
        return need(m, 2) && append_items(m, m->stack[m->sp - 2], m->sp - 1);
    case 'e': /* APPENDS */
        return mark_base(m, &base) && (base > floor_of(m) || fail(m, "APPENDS without a list")) &&
               append_items(m, m->stack[base - 1], base);
    case 'q': return take(m, 1, &b) && memo_put(m, b[0]);       /* BINPUT */
    case 'r': return take(m, 4, &b) && memo_put(m, le(b, 4));   /* LONG_BINPUT */
    case 0x94: return memo_put(m, m->memo_n); /* MEMOIZE */
    case 'h': return take(m, 1, &b) && memo_get(m, b[0]);     /* BINGET */
    case 'j': return take(m, 4, &b) && memo_get(m, le(b, 4)); /* LONG_BINGET */
    case 'c': { /* GLOBAL */
        char module[256], name[256];
        return global_line(m, module, sizeof module) && global_line(m, name, sizeof name) &&
               push(m, m->h->find_global(m->h->ctx, module, name));
    }
    case 0x93: { /* STACK_GLOBAL */
        if (!need(m, 2)) return false;
        ct_pt_value *mod = m->stack[m->sp - 2], *name = m->stack[m->sp - 1];
        if (mod->kind != CT_PT_STR || name->kind != CT_PT_STR || strlen(mod->str) != mod->len ||
            strlen(name->str) != name->len)
            return fail(m, "STACK_GLOBAL needs two strings");
        v = m->h->find_global(m->h->ctx, mod->str, name->str);
        pop_to(m, m->sp - 2);
        return push(m, v);
    }
    case 'R': { /* REDUCE */
        if (!need(m, 2)) return false;
        ct_pt_value *f = m->stack[m->sp - 2], *args = m->stack[m->sp - 1];
        if (f->kind != PT_GLOBAL) return fail(m, "REDUCE calls a %s, not a function", ct_pt_kind_name(ct_pt_kind_of(f)));
        if (args->kind != CT_PT_TUPLE) return fail(m, "REDUCE's arguments are not a tuple");
        v = m->h->reduce(m->h->ctx, f, args);
        pop_to(m, m->sp - 2);
        return push(m, v);
    }
    case 'b': { /* BUILD */
        if (!need(m, 2)) return false;
        bool ok = m->h->build(m->h->ctx, m->stack[m->sp - 2], m->stack[m->sp - 1]);
        pop_to(m, m->sp - 1);
        return ok;
    }
    case 'Q': { /* BINPERSID */
        if (!need(m, 1)) return false;
        v = m->h->persistent_load(m->h->ctx, m->stack[m->sp - 1]);
        pop_to(m, m->sp - 1);
        return push(m, v);
    }
    default:
        return fail(m, "refusing pickle opcode 0x%02x (%s): only the opcodes torch.save writes are read", op,
                    opcode_name(op));
    }
}

ct_pt_value *pk_load(const unsigned char *data, size_t n, size_t *used, const pk_hooks *h, const char *where) {
    vm m = {.p = data, .start = data, .end = data + n, .h = h, .where = where};
    bool stop = false, ok = true;
    while (ok && !stop) ok = step(&m, &stop);
    ct_pt_value *result = NULL;
    if (ok) {
        result = m.stack[0];
        m.sp = 0;
        if (result->opaque || result->kind > CT_PT_DICT) {
            pk_error(where, "the pickle holds a bare storage or class outside a tensor (only tensors, containers "
                            "and numbers are allowed)");
            ct_object_release(result);
            result = NULL;
        }
    }
    if (used) *used = (size_t)(m.p - data);
    pop_to(&m, 0);
    for (size_t i = 0; i < m.memo_cap; i++) ct_object_release(m.memo[i]);
    free(m.memo);
    free(m.stack);
    free(m.marks);
    return result;
}
