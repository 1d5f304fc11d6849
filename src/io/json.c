#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/json.h"
#include "core/mem.h"

#define MAX_DEPTH 64

typedef struct {
    const char *p, *start, *end;
    char *err;
    size_t err_size;
    bool failed;
} parser;

static bool fail(parser *ps, const char *what) {
    if (!ps->failed)
        snprintf(ps->err, ps->err_size, "invalid JSON at byte %zu: %s", (size_t)(ps->p - ps->start), what);
    ps->failed = true;
    return false;
}

static void skip_ws(parser *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')) ps->p++;
}

static bool literal(parser *ps, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n)) return fail(ps, "unknown literal");
    ps->p += n;
    return true;
}

int utf8_len(const unsigned char *p, const unsigned char *end) {
    unsigned c = p[0];
    int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || end - p < n) return 0;
    for (int i = 1; i < n; i++)
        if ((p[i] & 0xC0) != 0x80) return 0;
    uint32_t cp = n == 1 ? c : n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
    for (int i = 1; i < n; i++) cp = cp << 6 | (p[i] & 0x3F);
    static const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0; /* overlong, surrogate */
    return n;
}

static size_t put_utf8(char *out, uint32_t cp) {
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) { out[0] = (char)(0xC0 | cp >> 6); out[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12); out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18); out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3F)); out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static int hex4(parser *ps, uint32_t *out) {
    if (ps->end - ps->p < 4) return fail(ps, "truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        char c = ps->p[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return fail(ps, "bad \\u escape");
        v = v << 4 | (uint32_t)d;
    }
    ps->p += 4;
    *out = v;
    return true;
}

static bool parse_string(parser *ps, char **out) {
    ps->p++; /* opening quote */
    /* The decoded string is never longer than the encoded one. */
    const char *q = ps->p;
    while (q < ps->end && *q != '"') q += (*q == '\\' && q + 1 < ps->end) ? 2 : 1;
    if (q >= ps->end) return fail(ps, "unterminated string");
    char *s = ct_malloc((size_t)(q - ps->p) + 1), *w = s;
    if (!s) return fail(ps, "out of memory");
    while (*ps->p != '"') {
        unsigned char c = (unsigned char)*ps->p;
        if (c < 0x20) { free(s); return fail(ps, "control character in string"); }
        if (c == '\\') {
            ps->p++;
            char e = *ps->p++;
            uint32_t cp;
            switch (e) {
            case '"': *w++ = '"'; break;
            case '\\': *w++ = '\\'; break;
            case '/': *w++ = '/'; break;
            case 'b': *w++ = '\b'; break;
            case 'f': *w++ = '\f'; break;
            case 'n': *w++ = '\n'; break;
            case 'r': *w++ = '\r'; break;
            case 't': *w++ = '\t'; break;
            case 'u':
                if (!hex4(ps, &cp)) { free(s); return false; }
                if (cp >= 0xD800 && cp <= 0xDBFF) { /* a surrogate pair */
                    uint32_t lo;
                    if (ps->end - ps->p < 6 || ps->p[0] != '\\' || ps->p[1] != 'u') {
                        free(s);
                        return fail(ps, "unpaired surrogate");
                    }
                    ps->p += 2;
                    if (!hex4(ps, &lo) || lo < 0xDC00 || lo > 0xDFFF) { free(s); return fail(ps, "unpaired surrogate"); }
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    free(s);
                    return fail(ps, "unpaired surrogate");
                }
                if (cp == 0) { free(s); return fail(ps, "NUL in string"); }
                w += put_utf8(w, cp);
                break;
            default: free(s); return fail(ps, "bad escape");
            }
        } else {
            int n = utf8_len((const unsigned char *)ps->p, (const unsigned char *)ps->end);
            if (!n) { free(s); return fail(ps, "invalid UTF-8"); }
            memcpy(w, ps->p, (size_t)n);
            w += n;
            ps->p += n;
        }
    }
    ps->p++;
    *w = 0;
    *out = s;
    return true;
}

static bool parse_number(parser *ps, json_value *v) {
    const char *s = ps->p;
    if (*ps->p == '-') ps->p++;
    if (ps->p >= ps->end || !(*ps->p >= '0' && *ps->p <= '9')) return fail(ps, "bad number");
    if (*ps->p == '0') ps->p++;
    else while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') ps->p++;
    bool integer = true;
    if (ps->p < ps->end && *ps->p == '.') {
        integer = false;
        ps->p++;
        if (ps->p >= ps->end || !(*ps->p >= '0' && *ps->p <= '9')) return fail(ps, "bad number");
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') ps->p++;
    }
    if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
        integer = false;
        ps->p++;
        if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-')) ps->p++;
        if (ps->p >= ps->end || !(*ps->p >= '0' && *ps->p <= '9')) return fail(ps, "bad number");
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') ps->p++;
    }
    char buf[64];
    size_t n = (size_t)(ps->p - s);
    if (n >= sizeof buf) return fail(ps, "number too long");
    memcpy(buf, s, n);
    buf[n] = 0;
    v->kind = JSON_NUMBER;
    v->number = strtod(buf, NULL);
    if (integer) {
        errno = 0;
        long long i = strtoll(buf, NULL, 10);
        v->is_integer = errno == 0;
        v->integer = i;
    }
    return true;
}

static bool parse_value(parser *ps, json_value *v, int depth);

static bool grow(json_value *v, size_t *cap, bool object) {
    if (v->len < *cap) return true;
    size_t c = *cap ? *cap * 2 : 8;
    json_value *items = ct_realloc(v->items, c * sizeof *items);
    if (!items) return false;
    v->items = items;
    if (object) {
        char **keys = ct_realloc(v->keys, c * sizeof *keys);
        if (!keys) return false;
        v->keys = keys;
    }
    *cap = c;
    return true;
}

static bool parse_container(parser *ps, json_value *v, int depth, bool object) {
    if (depth >= MAX_DEPTH) return fail(ps, "nested too deeply");
    v->kind = object ? JSON_OBJECT : JSON_ARRAY;
    ps->p++;
    size_t cap = 0;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == (object ? '}' : ']')) {
        ps->p++;
        return true;
    }
    for (;;) {
        if (!grow(v, &cap, object)) return fail(ps, "out of memory");
        json_value *item = &v->items[v->len];
        memset(item, 0, sizeof *item);
        if (object) {
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != '"') return fail(ps, "expected a string key");
            if (!parse_string(ps, &v->keys[v->len])) return false;
            for (size_t i = 0; i < v->len; i++)
                if (!strcmp(v->keys[i], v->keys[v->len])) {
                    free(v->keys[v->len]);
                    return fail(ps, "duplicate key");
                }
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') {
                free(v->keys[v->len]);
                return fail(ps, "expected ':'");
            }
            ps->p++;
        }
        v->len++;
        if (!parse_value(ps, item, depth + 1)) return false;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == (object ? '}' : ']')) {
            ps->p++;
            return true;
        }
        return fail(ps, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static bool parse_value(parser *ps, json_value *v, int depth) {
    skip_ws(ps);
    if (ps->p >= ps->end) return fail(ps, "unexpected end");
    switch (*ps->p) {
    case '{': return parse_container(ps, v, depth, true);
    case '[': return parse_container(ps, v, depth, false);
    case '"': v->kind = JSON_STRING; return parse_string(ps, &v->string);
    case 't': v->kind = JSON_BOOL; v->boolean = true; return literal(ps, "true");
    case 'f': v->kind = JSON_BOOL; return literal(ps, "false");
    case 'n': v->kind = JSON_NULL; return literal(ps, "null");
    default: return parse_number(ps, v);
    }
}

static void free_inner(json_value *v) {
    for (size_t i = 0; i < v->len; i++) {
        free_inner(&v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->string);
}

void json_free(json_value *v) {
    if (!v) return;
    free_inner(v);
    free(v);
}

json_value *json_parse(const char *text, size_t n, char *err, size_t err_size) {
    parser ps = {text, text, text + n, err, err_size, false};
    json_value *v = ct_calloc(1, sizeof *v);
    if (!v) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    if (parse_value(&ps, v, 0)) {
        skip_ws(&ps);
        if (ps.p != ps.end) fail(&ps, "trailing characters");
    }
    if (ps.failed) {
        json_free(v);
        return NULL;
    }
    return v;
}

const json_value *json_get(const json_value *obj, const char *key) {
    if (!obj || obj->kind != JSON_OBJECT) return NULL;
    for (size_t i = 0; i < obj->len; i++)
        if (!strcmp(obj->keys[i], key)) return &obj->items[i];
    return NULL;
}

size_t json_escape(char *buf, size_t size, size_t len, const char *s) {
    if (len >= size) return 0;
    buf[len++] = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char tmp[8];
        const char *piece = tmp;
        size_t n;
        if (*p == '"' || *p == '\\') { tmp[0] = '\\'; tmp[1] = (char)*p; n = 2; }
        else if (*p < 0x20) n = (size_t)snprintf(tmp, sizeof tmp, "\\u%04x", *p);
        else { tmp[0] = (char)*p; n = 1; }
        if (len + n + 2 > size) return 0;
        memcpy(buf + len, piece, n);
        len += n;
    }
    buf[len++] = '"';
    buf[len] = 0;
    return len;
}
