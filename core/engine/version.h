/* tapegrad: the library's version. The macros are the version a program was
 * compiled against; tg_version() is the one it runs with (with a shared
 * library, a newer 0.x). */
#ifndef TAPEGRAD_VERSION_H
#define TAPEGRAD_VERSION_H

#define TAPEGRAD_VERSION_MAJOR 0
#define TAPEGRAD_VERSION_MINOR 1
#define TAPEGRAD_VERSION_PATCH 0

#ifdef __cplusplus
extern "C" {
#endif

/* "MAJOR.MINOR.PATCH", e.g. "0.1.0". */
const char *tg_version(void);

#ifdef __cplusplus
}
#endif

#endif
