/* seqtask: the eval and generate commands. */
#include "commands.h"

#include <stdio.h>

#include <tapegrad/core/engine/alloc.h>
#include "checkpoint.h"
#include "cli.h"
#include "eval.h"
#include "run.h"

int sq_cmd_eval(sq_config *c)
{
    tg_params *p;
    tg_model m;
    sq_run run;
    if (sq_open_model(c, "eval", &p, &m) != 0) return SQ_EXIT_USAGE;
    if (sq_run_init(&run, c) != 0) {
        fprintf(stderr, "seqtask eval: %s\n", tg_error());
        sq_model_destroy(p, &m);
        return SQ_EXIT_USAGE;
    }
    sq_decoder d;
    sq_eval_result r;
    int status = 1;
    if (sq_decoder_init(&d, &m) == 0) {
        printf("%s: %s, %ld held-out examples\n", c->model,
               c->kind == SQ_TASK_DATA ? c->data : sq_task_name(c->kind), (long)run.eval->count);
        if (c->show > 0) printf("\n");
        if (sq_evaluate(&d, run.eval, NULL, &r, stdout, (int)c->show) == 0) {
            printf("exact-sequence accuracy %.2f%% (%ld/%ld)\n", 100 * sq_exact_acc(&r), r.exact,
                   r.examples);
            printf("token accuracy          %.2f%% (%ld/%ld)\n", 100 * sq_token_acc(&r), r.tokens_ok,
                   r.tokens);
            status = 0;
        }
        sq_decoder_free(&d);
    }
    if (status) fprintf(stderr, "seqtask eval: %s\n", tg_error());
    sq_run_free(&run);
    sq_model_destroy(p, &m);
    return status;
}

int sq_cmd_generate(sq_config *c)
{
    tg_params *p;
    tg_model m;
    if (sq_open_model(c, "generate", &p, &m) != 0) return SQ_EXIT_USAGE;
    int tmax = m.cfg.max_len, n, n_out, status = 1;
    int32_t *src = tg_malloc(2 * (size_t)tmax * sizeof *src), *out = src + tmax;
    sq_decoder d;
    if (!src) {
        fprintf(stderr, "seqtask generate: out of memory\n");
    } else if ((n = sq_parse_symbols(c->input, (int)c->symbols, src, tmax)) < 0) {
        fprintf(stderr, "seqtask generate: --input '%s': %s\n", c->input, tg_error());
        status = SQ_EXIT_USAGE;
    } else if (sq_decoder_init(&d, &m) == 0) {
        if (sq_generate(&d, src, n, out, &n_out) == 0) {
            if (n > c->max_len)
                fprintf(stderr, "note: %d symbols, longer than the training lengths (at most %ld)\n",
                        n, c->max_len);
            for (int i = 0; i < n; i++) printf("%s%d", i ? " " : "", (int)src[i]);
            printf(" -> ");
            bool eos = n_out > 0 && out[n_out - 1] == SQ_EOS;
            sq_print_tokens(stdout, out, eos ? n_out - 1 : n_out);
            printf("%s\n", eos ? "" : "  (no EOS before Tmax)");
            status = 0;
        } else {
            fprintf(stderr, "seqtask generate: %s\n", tg_error());
            status = SQ_EXIT_USAGE;
        }
        sq_decoder_free(&d);
    } else {
        fprintf(stderr, "seqtask generate: %s\n", tg_error());
    }
    tg_free(src);
    sq_model_destroy(p, &m);
    return status;
}
