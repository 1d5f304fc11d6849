/* A small strict JSON reader (RFC 8259, UTF-8 validated, depth-limited) and the
 * string escaping the writers need.  Used for safetensors headers and run configs,
 * where input may be hostile: every failure is an error message, never a crash. */
#ifndef CT_IO_JSON_H
#define CT_IO_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } json_kind;

typedef struct json_value json_value;
struct json_value {
    json_kind kind;
    bool boolean;
    double number;
    bool is_integer; /* the number was written as an integer that fits int64 */
    int64_t integer;
    char *string;    /* JSON_STRING: NUL-terminated UTF-8 (may contain no NUL) */
    size_t len;      /* items of an array or object */
    json_value *items;
    char **keys;     /* JSON_OBJECT: one per item */
};

/* Parses text[0..n); NULL with a message in err (e.g. "invalid JSON at byte 12:
 * expected ':'") on failure. */
json_value *json_parse(const char *text, size_t n, char *err, size_t err_size);
void json_free(json_value *v);
/* The member named key of an object, or NULL. */
const json_value *json_get(const json_value *obj, const char *key);

/* Length of the valid UTF-8 sequence at p (1-4; p < end), or 0 when it is not valid
 * (overlong, a surrogate, beyond U+10FFFF, cut short). */
int utf8_len(const unsigned char *p, const unsigned char *end);
/* Appends s as a JSON string literal (quotes and escapes) to buf; returns the new
 * length, or 0 when it does not fit. */
size_t json_escape(char *buf, size_t size, size_t len, const char *s);

#endif
