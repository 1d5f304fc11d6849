/* The names torch.save gives storages of each dtype (torch/storage.py's classes). */
#include "io/pt_format.h"

const char *pt_storage_class(ct_dtype dtype) {
    switch (dtype) {
    case CT_F32: return "FloatStorage";
    case CT_F64: return "DoubleStorage";
    case CT_F16: return "HalfStorage";
    case CT_BF16: return "BFloat16Storage";
    case CT_I64: return "LongStorage";
    case CT_I32: return "IntStorage";
    case CT_I16: return "ShortStorage";
    case CT_I8: return "CharStorage";
    case CT_U8: return "ByteStorage";
    case CT_BOOL: return "BoolStorage";
    default: return NULL;
    }
}
