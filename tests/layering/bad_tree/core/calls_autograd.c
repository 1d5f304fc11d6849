/* A core file that breaks the layering rule: the check must refuse it. */
#include "kernels/abi.h"
#include "autograd/hooks.h"
