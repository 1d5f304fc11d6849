/* What torch.save's files name and hold, shared by the .pt reader and writer. */
#ifndef CT_IO_PT_FORMAT_H
#define CT_IO_PT_FORMAT_H

#include "ctorch.h"

/* The storage class torch.save names for a dtype ("FloatStorage" for float32, in
 * module torch); NULL for none. */
const char *pt_storage_class(ct_dtype dtype);

#endif
