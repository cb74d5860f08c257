/* tapegrad: error messages into caller buffers (see core/engine/error.h). */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>

int tg_set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}
