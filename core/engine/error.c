/* tapegrad: the thread-local error message (see core/engine/error.h). */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char message[TG_ERROR_MAX];
static _Thread_local int has_message;

const char *tg_error(void) { return has_message ? message : NULL; }

void tg_error_clear(void)
{
    has_message = 0;
    message[0] = '\0';
}

int tg_error_set(const char *fmt, ...)
{
    char buf[TG_ERROR_MAX]; /* the arguments may point into message */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    memcpy(message, buf, sizeof buf);
    has_message = 1;
    return -1;
}
