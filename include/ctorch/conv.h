/* ctorch/conv.h — convolution, pooling and interpolation (torch.nn.functional). */
#ifndef CTORCH_CONV_H
#define CTORCH_CONV_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif
