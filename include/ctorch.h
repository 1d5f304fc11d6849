/* ctorch — PyTorch's model in C.
 *
 * The umbrella header: tensors (ctorch/tensor.h), elementwise ops
 * (ctorch/pointwise.h), reductions (ctorch/reduce.h), views (ctorch/shape.h),
 * autograd (ctorch/autograd.h), gradient checks (ctorch/gradcheck.h), memory
 * statistics (ctorch/memory.h), matrix products (ctorch/linalg.h), convolution,
 * pooling and interpolation (ctorch/conv.h).  Conventions
 * (ctorch/base.h): every function returning an object registers it with the innermost
 * CT_SCOPE; a failing call returns NULL and sets ct_last_error(). */
#ifndef CTORCH_H
#define CTORCH_H

#include "ctorch/base.h"
#include "ctorch/version.h"
#include "ctorch/tensor.h"
#include "ctorch/pointwise.h"
#include "ctorch/reduce.h"
#include "ctorch/shape.h"
#include "ctorch/autograd.h"
#include "ctorch/memory.h"
#include "ctorch/gradcheck.h"
#include "ctorch/nn.h"
#include "ctorch/state_dict.h"
#include "ctorch/optim.h"
#include "ctorch/lr_scheduler.h"
#include "ctorch/grad_scaler.h" /* loss scaling for mixed precision */
#include "ctorch/serialize.h"
#include "ctorch/pt.h"         /* PyTorch .pt / .pth files */
#include "ctorch/rnn.h"
#include "ctorch/attention.h"
#include "ctorch/linalg.h"
#include "ctorch/conv.h"
#include "ctorch/random.h"
#include "ctorch/index.h"
#include "ctorch/ops.h"         /* op schemas and the record hook */
#include "ctorch/profiler.h"    /* torch.profiler: op events, tables, Chrome traces */
#include "ctorch/function.h"   /* custom autograd functions */
#include "ctorch/checkpoint.h" /* gradient checkpointing */
#include "ctorch/loss.h"       /* loss functions and modules */
#include "ctorch/data.h"       /* datasets, transforms, samplers, DataLoader */
#include "ctorch/layers.h"    /* containers, layers, F.linear/batch_norm/... */
#include "ctorch/init.h"      /* nn.init */
#include "ctorch/distributed.h" /* process groups, collectives, DDP (torch.distributed) */
#include "ctorch/amp.h"        /* autocast (torch.autocast) */
#include "ctorch/jit.h"        /* traced graphs, .ctm files (torch.jit.trace) */
#include "ctorch/onnx.h"        /* export to ONNX (torch.onnx.export) */
#include "ctorch/tensorboard.h" /* TensorBoard event files (SummaryWriter) */

#endif
