/* ctorch/version.h — the version of the headers, and of the library at run time.
 *
 * Versions follow semantic versioning; while the major version is 0, a minor
 * version may change the API and the ABI (the shared library's SONAME is
 * libctorch.so.MAJOR.MINOR then), a patch version changes neither.  The build reads
 * the numbers below: they are the one place the version is written.
 *
 *     #if CTORCH_VERSION_AT(0, 2, 0)
 *     // code that needs 0.2.0 or later
 *     #endif
 *     printf("built with %s, running %s\n", CTORCH_VERSION_STRING, ct_version());
 */
#ifndef CTORCH_VERSION_H
#define CTORCH_VERSION_H

#include "base.h"

#define CTORCH_VERSION_MAJOR 0        /* the headers' major version */
#define CTORCH_VERSION_MINOR 2        /* the headers' minor version */
#define CTORCH_VERSION_PATCH 0        /* the headers' patch version */
#define CTORCH_VERSION_STRING "0.2.0" /* the three, as a string */

/* True when these headers are version maj.min.patch or later. */
#define CTORCH_VERSION_AT(maj, min, patch)                                            \
    (CTORCH_VERSION_MAJOR > (maj) ||                                                  \
     (CTORCH_VERSION_MAJOR == (maj) &&                                                \
      (CTORCH_VERSION_MINOR > (min) ||                                                \
       (CTORCH_VERSION_MINOR == (min) && CTORCH_VERSION_PATCH >= (patch)))))

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

/* The version of the library running ("0.2.0"), which may differ from the headers'
 * CTORCH_VERSION_STRING when a program runs against another build of the shared
 * library. */
const char *ct_version(void);
#define ct_version(...) CT_AT(ct_version(__VA_ARGS__))

#ifdef __cplusplus
}
#endif
CT_API_END
#endif
