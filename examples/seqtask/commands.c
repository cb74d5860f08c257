/* seqtask: each command's handler, and the eval and generate commands. */
#include "commands.h"

#include <stdio.h>

#include <tapegrad/core/engine/alloc.h>
#include "checkpoint.h"
#include "cli.h"
#include "eval.h"
#include "run.h"

#define HANDLER_ROW_(id, name, run, summary, help) [id] = run,
static const sq_command_fn handlers[SQ_CMD_COUNT] = {SQ_COMMANDS(HANDLER_ROW_)};
#undef HANDLER_ROW_

sq_command_fn sq_command_handler(sq_command cmd)
{
    return (unsigned)cmd < SQ_CMD_COUNT ? handlers[cmd] : NULL;
}

int sq_cmd_eval(sq_config *c)
{
    sq_session s;
    int status = sq_session_open(&s, c, true);
    if (status) return status;
    sq_eval_result r;
    const sq_dataset *eval = s.run.eval;
    printf("%s: %s, %ld held-out examples\n", c->model, c->kind == SQ_TASK_DATA ? c->data : sq_task_name(c->kind),
           (long)eval->count);
    if (c->show > 0) printf("\n");
    status = 1;
    if (sq_evaluate(&s.d, eval, NULL, &r, stdout, (int)c->show) == 0) {
        printf("exact-sequence accuracy %.2f%% (%ld/%ld)\n", 100 * sq_exact_acc(&r), r.exact, r.examples);
        printf("token accuracy          %.2f%% (%ld/%ld)\n", 100 * sq_token_acc(&r), r.tokens_ok, r.tokens);
        status = 0;
    }
    if (status) fprintf(stderr, "seqtask eval: %s\n", tg_error());
    sq_session_close(&s);
    return status;
}

int sq_cmd_generate(sq_config *c)
{
    sq_session s;
    int status = sq_session_open(&s, c, false);
    if (status) return status;
    int tmax = s.m.cfg.max_len, n, n_out;
    int32_t *src = tg_malloc(2 * (size_t)tmax * sizeof *src), *out = src + tmax;
    status = 1;
    if (!src) {
        fprintf(stderr, "seqtask generate: out of memory\n");
    } else if ((status = sq_session_generate(&s, c, src, &n, out, &n_out)) == 0) {
        if (n > c->max_len)
            fprintf(stderr, "note: %d symbols, longer than the training lengths (at most %ld)\n", n,
                    c->max_len);
        for (int i = 0; i < n; i++) printf("%s%d", i ? " " : "", (int)src[i]);
        printf(" -> ");
        bool eos = n_out > 0 && out[n_out - 1] == SQ_EOS;
        sq_print_tokens(stdout, out, eos ? n_out - 1 : n_out);
        printf("%s\n", eos ? "" : "  (no EOS before Tmax)");
    }
    tg_free(src);
    sq_session_close(&s);
    return status;
}
