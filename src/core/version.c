/* The version of the library as built (ctorch/version.h). */
#include "ctorch/version.h"

const char *(ct_version)(void) { return CTORCH_VERSION_STRING; }
