/* The PyTorch twin of each op-case row (tests/op_cases.h), in
 * tests/op_cases_torch.c: a Python expression over the row's inputs x[0],
 * x[1], ... (float64 tensors, with requires_grad where the input is OC_X;
 * bool and int64 as themselves), torch and F (torch.nn.functional) in scope.
 * bench/torch/make_op_case_fixtures.py evaluates each one on the inputs
 * test_op_cases_f64 exports and writes its output and input grads to
 * tests/fixtures/op_cases_torch.safetensors, which tests/test_op_cases.c
 * compares every twinned row with. A row without a twin says why.
 *
 * A row's key is its name, and "name#k" for the k-th (from 1) later row of
 * the same name, in the order tests/test_op_cases.c runs the families. */
#ifndef TAPEGRAD_TESTS_OP_CASES_TORCH_H
#define TAPEGRAD_TESTS_OP_CASES_TORCH_H

typedef struct oc_twin {
    const char *row;    /* the row's key */
    const char *torch;  /* the expression, or NULL */
    const char *why;    /* why there is none */
} oc_twin;

extern const oc_twin oc_twins[];
extern const int oc_n_twins;

/* The upstream grad backward starts from, element i of the output (flat):
 * bench/torch/make_op_case_fixtures.py's upstream() is the same. */
#define OC_UPSTREAM(i) ((double)((int)((i) % 7) - 3) / 4)
#define OC_UPSTREAM_TEXT "((i % 7) - 3) / 4 at flat index i of the output"

#endif
