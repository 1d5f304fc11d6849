/* CT_ASAN: 1 in a build with AddressSanitizer, whichever compiler (gcc defines
 * __SANITIZE_ADDRESS__, clang answers __has_feature(address_sanitizer)), else 0.  The
 * object pools and the block cache are off there, so that ASan sees every release. */
#ifndef CT_CORE_SANITIZE_H
#define CT_CORE_SANITIZE_H

#if defined(__SANITIZE_ADDRESS__)
#define CT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CT_ASAN 1
#endif
#endif
#ifndef CT_ASAN
#define CT_ASAN 0
#endif

#endif
