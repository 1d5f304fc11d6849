/* ctorch/export.h — which symbols the library exports.
 *
 * The library is built with hidden visibility: only what the public headers declare
 * is exported, and the library's own functions can neither clash with nor be
 * interposed by a program's functions of the same name.  Each public header brackets
 * its declarations with CT_API_BEGIN ... CT_API_END; a compiler without GCC's
 * visibility pragmas exports everything, as it would anyway. */
#ifndef CTORCH_EXPORT_H
#define CTORCH_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define CT_API_BEGIN _Pragma("GCC visibility push(default)")
#define CT_API_END _Pragma("GCC visibility pop")
#else
#define CT_API_BEGIN
#define CT_API_END
#endif

#endif
