/* A header core reaches that includes cpu/: the check follows core's includes. */
#include "cpu/kernels.h"
