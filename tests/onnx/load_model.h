/* An ONNX file read back into protobuf-c's ModelProto, for the ONNX tests; NULL when
 * it cannot be read or parsed.  Free with onnx__model_proto__free_unpacked. */
#ifndef CT_TEST_ONNX_LOAD_MODEL_H
#define CT_TEST_ONNX_LOAD_MODEL_H

#include <stdio.h>
#include <stdlib.h>

#include "onnx/onnx.pb-c.h"

static inline Onnx__ModelProto *onnx_test_load(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(n > 0 ? n : 1);
    bool ok = buf && fread(buf, 1, n, f) == (size_t)n;
    fclose(f);
    Onnx__ModelProto *m = ok ? onnx__model_proto__unpack(NULL, n, buf) : NULL;
    free(buf);
    return m;
}

#endif
