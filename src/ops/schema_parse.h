/* The parser of PyTorch's schema language, on its own (no op table, no error state):
 * src/ops/schema.c parses the rows of schema.def with it at run time, and the build's
 * generator of typed attribute structs (tools/gen_attrs.c) at build time.
 *
 *     ct_schema s = {0};
 *     const char *why = ct_schema_parse("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", &s);
 *     // why == NULL; s.n_inputs == 2, s.n_attrs == 1, s.attrs[0].name == "alpha"
 */
#ifndef CT_OPS_SCHEMA_PARSE_H
#define CT_OPS_SCHEMA_PARSE_H

#include "ctorch/ops.h"

/* Fills s's aten_name, signature, inputs, attributes and outputs from text (the strings
 * and arrays are malloc'ed and never freed: schemas live as long as the program).
 * Returns NULL, or a static description of what is wrong with text. */
const char *ct_schema_parse(const char *text, ct_schema *s);

#endif
