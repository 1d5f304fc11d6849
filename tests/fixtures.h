/* PyTorch fixtures: tests/fixtures/<family>.fx, written by tests/fixtures/gen.py. */
#ifndef CT_TEST_FIXTURES_H
#define CT_TEST_FIXTURES_H

#include "ctorch.h"

typedef struct fx_file fx_file;
/* Loads tests/fixtures/<name>.fx (tests run from tests/); NULL and a message if absent. */
fx_file *fx_load(const char *name);
void fx_free(fx_file *f);
/* A new float64 or int64 tensor (registered with the scope) holding fixture `key`;
 * NULL and a test failure when absent.  fx_get_as converts to dtype and can set
 * requires_grad. */
ct_tensor *fx_get(fx_file *f, const char *key);
/* Whether the file holds fixture `key` (no failure when not). */
bool fx_has(fx_file *f, const char *key);
ct_tensor *fx_get_as(fx_file *f, const char *key, ct_dtype dtype, bool requires_grad);

#endif
