/* seqtask: looking inside a trained model: attention heatmaps (attn) and
 * what each head does (heads). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <tapegrad/core/engine/alloc.h>
#include <tapegrad/viz/heatmap.h>
#include <tapegrad/viz/plot.h>
#include "checkpoint.h"
#include "cli.h"
#include "commands.h"
#include "eval.h"
#include "run.h"

int sq_attention_png_labelled(const tg_model *m, const int32_t *tokens, const char *const *labels, int L,
                              const char *path)
{
    int NL = m->cfg.n_layers, H = m->cfg.n_heads, rc = -1;
    size_t cell = (size_t)L * (size_t)L;
    tg_tape *t = tg_tape_new();
    tg_tensor **attn = tg_calloc((size_t)NL, sizeof *attn);
    tg_real *w = tg_malloc((size_t)NL * (size_t)H * cell * sizeof *w);
    if (!t || !attn || !w) {
        tg_error_set("%s: out of memory", path);
        goto done;
    }
    tg_no_grad_begin(t);  /* this tape only evaluates */
    tg_tape_set_training(t, false);
    if (!tg_model_forward(t, m, tg_tensor_from_dtype(t, TG_I32, tokens, 2, (int[]){1, L}), NULL, attn)) {
        tg_error_set("%s: %s", path, tg_tape_error(t));
        goto done;
    }
    for (int l = 0; l < NL; l++) memcpy(w + (size_t)l * H * cell, attn[l]->data, (size_t)H * cell * sizeof *w);
    for (size_t k = 0; k < (size_t)NL * H * cell; k++)  /* the causal mask: key j > query i, drawn as masked */
        if ((int)(k % (size_t)L) > (int)(k / (size_t)L % (size_t)L)) w[k] = -INFINITY;
    rc = tg_heatmap_png_groups(path, w, NL, H, m->cfg.n_kv_heads, L, L, labels, labels);
done:
    tg_free(w);
    tg_free(attn);
    tg_tape_free(t);
    return rc;
}

int sq_attention_png(const tg_model *m, const int32_t *tokens, int L, const char *path)
{
    char *text = tg_malloc((size_t)L * 16);
    const char **labels = tg_malloc((size_t)L * sizeof *labels);
    int rc = -1;
    if (!text || !labels) tg_error_set("%s: out of memory", path);
    else {
        for (int i = 0; i < L; i++) labels[i] = sq_token_str(tokens[i], text + 16 * i, 16);
        rc = sq_attention_png_labelled(m, tokens, labels, L, path);
    }
    tg_free(labels);
    tg_free(text);
    return rc;
}

int sq_cmd_attn(sq_config *c)
{
    sq_session s;
    int status = sq_session_open(&s, c, false);
    if (status) return status;
    int tmax = s.m.cfg.max_len, n, n_out;
    int32_t *buf = tg_malloc(3 * (size_t)tmax * sizeof *buf), *src = buf, *out = buf + tmax, *seq = buf + 2 * tmax;
    status = 1;
    if (!buf) {
        fprintf(stderr, "seqtask attn: out of memory\n");
    } else if ((status = sq_session_generate(&s, c, src, &n, out, &n_out)) == 0) {
        /* the heatmap of BOS x SEP output, without the final EOS (it predicts nothing) */
        int L = 0;
        seq[L++] = SQ_BOS;
        for (int i = 0; i < n; i++) seq[L++] = SQ_SYM0 + src[i];
        seq[L++] = SQ_SEP;
        for (int i = 0; i < n_out && L < tmax; i++) seq[L++] = out[i];
        if (L > n + 3 && seq[L - 1] == SQ_EOS) L--;
        if (sq_attention_png(&s.m, seq, L, c->png) == 0) {
            printf("input  %s\noutput ", c->input);
            sq_print_tokens(stdout, out, n_out);
            printf("\nwrote %s (%ld layers x %ld heads, %d tokens)\n", c->png, c->layers, c->heads, L);
        } else {
            fprintf(stderr, "seqtask attn: %s\n", tg_error());
            status = 1;
        }
    }
    tg_free(buf);
    sq_session_close(&s);
    return status;
}

/* Mean entropy (nats) of each head's attention rows at the positions that
 * predict y1..ym and EOS, over the set (teacher-forced). ent[l * H + h]. */
static int head_entropy(sq_decoder *d, const sq_dataset *set, double *ent)
{
    const tg_model *m = d->m;
    int NL = m->cfg.n_layers, H = m->cfg.n_heads;
    double rows = 0;
    tg_tensor *attn[TG_HEATMAP_MAX_GRID];
    memset(ent, 0, (size_t)NL * H * sizeof *ent);
    for (int i0 = 0; i0 < set->count; i0 += d->cap) {
        int k = set->count - i0 < d->cap ? set->count - i0 : d->cap;
        const sq_example *ex = set->ex + i0;
        sq_batch_fill(&d->batch, ex, k);
        int T = d->batch.T;
        tg_tape_reset(d->tape);
        tg_tensor *ids = tg_tensor_from_dtype(d->tape, TG_I32, d->batch.ids, 2, (int[]){k, T});
        tg_tensor *lens = tg_tensor_from_dtype(d->tape, TG_I32, d->batch.lens, 1, (int[]){k});
        if (!tg_model_forward(d->tape, m, ids, &(tg_model_opts){.lens = lens}, attn)) {
            tg_error_set("%s", tg_tape_error(d->tape));
            return -1;
        }
        for (int b = 0; b < k; b++)
            for (int q = ex[b].n + 1; q < d->batch.lens[b]; q++, rows++)
                for (int l = 0; l < NL; l++)
                    for (int h = 0; h < H; h++) {
                        const tg_real *a = attn[l]->data + (((size_t)b * H + h) * T + q) * T;
                        double e = 0;
                        for (int j = 0; j <= q; j++)
                            if (a[j] > 0) e -= (double)a[j] * log((double)a[j]);
                        ent[l * H + h] += e;
                    }
    }
    for (int i = 0; i < NL * H; i++) ent[i] /= rows > 0 ? rows : 1;
    return 0;
}

/* For each head: entropy, accuracy with that head silenced, and the drop. */
static int heads_report(sq_decoder *d, const sq_config *c, const sq_dataset *set)
{
    int NL = (int)c->layers, H = (int)c->heads, n = NL * H;
    double *ent = tg_malloc((size_t)n * 2 * sizeof *ent), *drop = ent + n;
    tg_tensor *mask = tg_tensor_alloc(2, (int[]){NL, H});  /* float [layers, heads]: 0 silences a head */
    char(*labels)[48] = tg_malloc((size_t)n * sizeof *labels);
    const char **lp = tg_malloc((size_t)n * sizeof *lp);
    int rc = -1;
    sq_eval_result base, r;
    if (!ent || !mask || !labels || !lp) {
        tg_error_set("out of memory");
        goto done;
    }
    if (head_entropy(d, set, ent) || sq_evaluate(d, set, NULL, &base, NULL, 0))
        goto done;
    printf("%s: %ld held-out examples, exact-sequence accuracy %.2f%% with every head\n\n", c->model,
           base.examples, 100 * sq_exact_acc(&base));
    bool grouped = c->kv_heads && c->kv_heads < H;  /* a column for each head's key/value head */
    printf("layer head%s  entropy(nats)  acc without it  drop (points)\n", grouped ? "  kv" : "");
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) mask->data[j] = j != i;
        if (sq_evaluate(d, set, mask, &r, NULL, 0)) goto done;
        drop[i] = 100 * (sq_exact_acc(&base) - sq_exact_acc(&r));
        if (grouped)
            snprintf(labels[i], sizeof labels[i], "L%d H%d KV%ld", i / H, i % H, i % H / (H / c->kv_heads));
        else
            snprintf(labels[i], sizeof labels[i], "L%d H%d", i / H, i % H);
        lp[i] = labels[i];
        if (grouped) printf("%5d %4d %3ld", i / H, i % H, i % H / (H / c->kv_heads));
        else printf("%5d %4d", i / H, i % H);
        printf("  %13.3f  %13.2f%%  %13.2f\n", ent[i], 100 * sq_exact_acc(&r),
               drop[i]);
    }
    char title[160];
    snprintf(title, sizeof title, "drop in exact-sequence accuracy (points) when one head is silenced "
             "(all heads: %.1f%%)", 100 * sq_exact_acc(&base));
    rc = tg_plot_bars_png(c->png, title, lp, drop, n);
    if (rc == 0) printf("\nwrote %s\n", c->png);
done:
    tg_free(ent);
    tg_tensor_free(mask);
    tg_free(labels);
    tg_free(lp);
    return rc;
}

int sq_cmd_heads(sq_config *c)
{
    sq_session s;
    int status = sq_session_open(&s, c, true);
    if (status) return status;
    if (!c->png[0]) {
        char dir[SQ_PATH_MAX];
        sq_dirname(c->model, dir, sizeof dir);
        snprintf(c->png, sizeof c->png, "%.1000s/heads.png", dir);
    }
    status = heads_report(&s.d, c, s.run.eval) == 0 ? 0 : 1;
    if (status) fprintf(stderr, "seqtask heads: %s\n", tg_error());
    sq_session_close(&s);
    return status;
}
