/* tapegrad: the version string, from the macros in version.h. */
#include "version.h"

#include "tensor.h"

#define TG_STR_(x) #x
#define TG_STR(x) TG_STR_(x)

const char *tg_version(void)
{
    return TG_STR(TAPEGRAD_VERSION_MAJOR) "." TG_STR(TAPEGRAD_VERSION_MINOR) "." TG_STR(TAPEGRAD_VERSION_PATCH);
}
