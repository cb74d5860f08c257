/* The seqtask fuzz targets' one-input checks (fuzz_args.c, fuzz_data.c),
 * also replayed on the corpora by tests/test_seqtask_cli.c: each aborts when
 * a check fails, else returns the parser's status (see the targets). */
#ifndef TAPEGRAD_TESTS_FUZZ_H
#define TAPEGRAD_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int fuzz_args_one(const uint8_t *data, size_t size);
int fuzz_data_one(const uint8_t *data, size_t size);

#endif
