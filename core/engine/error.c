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

/* The float64 copy of the typed sources has every name suffixed (CMakeLists.txt,
 * core/engine/f64_names.h), so its __func__ says "tg_softmax__f64": a message
 * names the function as the user called it. */
static void unsuffix(char *s)
{
    static const char suffix[] = "__f64";
    for (char *p; (p = strstr(s, suffix));) memmove(p, p + sizeof suffix - 1, strlen(p + sizeof suffix - 1) + 1);
}

int tg_error_set(const char *fmt, ...)
{
    char buf[TG_ERROR_MAX]; /* the arguments may point into message */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    unsuffix(buf);
    memcpy(message, buf, sizeof buf);
    has_message = 1;
    return -1;
}
