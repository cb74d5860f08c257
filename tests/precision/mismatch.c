/* Compiled with the other precision than the library's (the flip below), this
 * program must not link: tests/CMakeLists.txt expects the symbol of
 * core/engine/tensor.h naming both precisions in the linker's message. */
#ifdef TAPEGRAD_DOUBLE
#undef TAPEGRAD_DOUBLE
#else
#define TAPEGRAD_DOUBLE
#endif
#include <tapegrad/tapegrad.h>

int main(void)
{
    tg_tape *t = tg_tape_new();
    tg_tensor *x = tg_tensor_zeros(t, 1, (int[]){4});
    tg_tape_free(t);
    return x != NULL;
}
