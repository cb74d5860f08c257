/* charlm: the sample command: text from a trained model over the key/value
 * cache (tg_model_generate: a prefill of the prompt, then one decode per
 * new byte, each drawn by tg_sample), and the attention heatmap of the
 * sampled sentence. */
#include <stdio.h>
#include <string.h>

#include <tapegrad/core/engine/alloc.h>
#include <tapegrad/nn/sample.h>
#include "../seqtask/cli.h"
#include "../seqtask/commands.h"
#include "../seqtask/run.h"
#include "charlm.h"

#define CL_HEATMAP_MAX 64  /* bytes on each axis of the heatmap */

/* A byte as a heatmap label: printable ASCII as itself, space "_", else
 * "\n", "\t" or two hex digits. */
static const char *byte_label(int b, char *buf)
{
    if (b == ' ') return "_";
    if (b == '\n') return "\\n";
    if (b == '\t') return "\\t";
    if (b > 32 && b < 127) buf[0] = (char)b, buf[1] = 0;
    else snprintf(buf, 4, "%02x", b);
    return buf;
}

int cl_attention_png(const tg_model *m, const int32_t *bytes, int L, const char *path)
{
    char text[CL_HEATMAP_MAX][4];
    const char *labels[CL_HEATMAP_MAX];
    if (L > CL_HEATMAP_MAX) L = CL_HEATMAP_MAX;
    for (int i = 0; i < L; i++) labels[i] = byte_label(bytes[i], text[i]);
    return sq_attention_png_labelled(m, bytes, labels, L, path);
}

/* want bytes after seq[0..n) into seq[n..): beyond the context the model
 * reads, a window slides: each tg_model_generate call starts over from the
 * last half context of text. *n_out bytes made. An exit status. */
static int generate(const tg_model *m, int32_t *seq, int n, int want, const tg_sample_opts *so, tg_rng *rng,
                    int *n_out)
{
    int T = m->cfg.max_len, total = n;
    while (total - n < want) {
        int keep = total < T / 2 || T < 2 ? total : T / 2, got = 0;
        if (keep >= T) keep = T - 1;
        int room = want - (total - n) < T - keep ? want - (total - n) : T - keep;
        if (tg_model_generate(m, seq + total, room, seq + total - keep, keep, so, NULL, 0, rng, &got)) {
            fprintf(stderr, "charlm sample: %s\n", tg_error());
            return 1;
        }
        total += got;
        if (got == 0) break;
    }
    *n_out = total - n;
    return 0;
}

/* The sentence for the heatmap: up to the first '.' after the prompt (or
 * CL_HEATMAP_MAX bytes). */
static int sentence_len(const int32_t *seq, int n_prompt, int L)
{
    for (int i = n_prompt; i < L && i < CL_HEATMAP_MAX; i++)
        if (seq[i] == '.') return i + 1;
    return L < CL_HEATMAP_MAX ? L : CL_HEATMAP_MAX;
}

int cl_cmd_sample(cl_config *c)
{
    tg_params *p;
    tg_model m;
    sq_set_threads(c->threads);
    if (cl_open(c->model, c, &p, &m, NULL)) {
        fprintf(stderr, "charlm sample: %s\n", tg_error());
        return SQ_EXIT_USAGE;
    }
    int T = m.cfg.max_len, n = (int)strlen(c->prompt), n_out = 0, status = 0;
    int32_t *seq = tg_malloc((size_t)(n + 1 + c->tokens) * sizeof *seq);
    if (n >= T) {
        fprintf(stderr, "charlm sample: --prompt is %d bytes; the model reads at most %d (its --context) and "
                        "needs room for one more\n", n, T);
        status = SQ_EXIT_USAGE;
    } else if (!seq) {
        fprintf(stderr, "charlm sample: out of memory\n");
        status = 1;
    } else {
        seq[0] = '\n';  /* an empty prompt starts a line */
        for (int i = 0; i < n; i++) seq[i] = (uint8_t)c->prompt[i];
        if (n == 0) n = 1;
        tg_sample_opts so = {.temperature = c->temperature, .top_k = (int)c->top_k, .top_p = c->top_p};
        tg_rng rng;
        tg_rng_seed(&rng, (uint64_t)c->seed);
        status = generate(&m, seq, n, (int)c->tokens, &so, &rng, &n_out);
    }
    if (!status) {
        for (int i = 0; i < n + n_out; i++) putchar(seq[i]);
        putchar('\n');
        int L = sentence_len(seq, n, n + n_out < T ? n + n_out : T);
        if (c->png[0] && cl_attention_png(&m, seq, L, c->png)) {
            fprintf(stderr, "charlm sample: %s\n", tg_error());
            status = 1;
        } else if (c->png[0]) {
            fprintf(stderr, "wrote %s (%d layers x %d heads, %d bytes)\n", c->png, m.cfg.n_layers, m.cfg.n_heads, L);
        }
    }
    tg_free(seq);
    tg_model_free(&m);
    tg_params_free(p);
    return status;
}
