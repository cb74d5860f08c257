/* seqtask: greedy decoding (teacher-forced first pass, then token by token
 * for the failures) and accuracy. */
#include "eval.h"

#include <string.h>

#include <tapegrad/core/engine/alloc.h>
#include <tapegrad/core/ops/ops.h>

/* Rows per pass: at most 256, and at most SQ_DECODE_CELLS positions in all,
 * which bounds a pass's activations and the key/value cache at long lengths. */
#define SQ_DECODE_ROWS 256
#define SQ_DECODE_CELLS 16384

int sq_decoder_init(sq_decoder *d, const tg_model *m)
{
    memset(d, 0, sizeof *d);
    d->m = m;
    d->tmax = m->cfg.max_len;
    d->cap = SQ_DECODE_CELLS / d->tmax;
    d->cap = d->cap < 1 ? 1 : d->cap > SQ_DECODE_ROWS ? SQ_DECODE_ROWS : d->cap;
    size_t cells = (size_t)d->cap * (size_t)d->tmax;
    d->tape = tg_tape_new();
    d->seq = tg_malloc(cells * sizeof *d->seq);
    d->ids = tg_malloc((size_t)d->cap * sizeof *d->ids);
    d->len = tg_malloc((size_t)d->cap * sizeof *d->len);
    d->row = tg_malloc((size_t)d->cap * sizeof *d->row);
    d->done = tg_malloc((size_t)d->cap * sizeof *d->done);
    d->pos = tg_malloc((size_t)d->cap * sizeof *d->pos);
    if (!d->tape || !d->ids || !d->seq || !d->len || !d->row || !d->done || !d->pos ||
        sq_batch_init(&d->batch, d->cap, d->tmax - 1) != 0 || tg_kv_cache_init(&d->kv, m, d->cap)) {
        sq_decoder_free(d);
        tg_error_set("out of memory for the decoder");
        return -1;
    }
    tg_no_grad_begin(d->tape);  /* the decoder's tape only evaluates */
    tg_tape_set_training(d->tape, false);
    return 0;
}

void sq_decoder_free(sq_decoder *d)
{
    tg_tape_free(d->tape);
    sq_batch_free(&d->batch);
    tg_free(d->ids);
    tg_free(d->seq);
    tg_free(d->len);
    tg_free(d->row);
    tg_free(d->done);
    tg_free(d->pos);
    if (d->kv.kv) tg_kv_cache_free(&d->kv);
    memset(d, 0, sizeof *d);
}

static int32_t argmax(const tg_real *x, int V)
{
    int32_t best = 0;
    for (int v = 1; v < V; v++)
        if (x[v] > x[best]) best = v;
    return best;
}

static int forward_fail(sq_decoder *d)
{
    tg_error_set("decoding: %s", tg_tape_error(d->tape) ? tg_tape_error(d->tape) : "failed");
    return -1;
}

/* Token by token for the rows of [0, rows) not yet done, with the key/value
 * cache, whose row r holds positions [0, len[r] - 1) (a prefill put them
 * there). The pending rows are packed into the first cache rows and decode
 * together, each at its own position: it feeds its last token and appends
 * the argmax. A row that is done leaves the batch (the last pending row
 * takes its place), so every decode costs O(position) for each row still
 * decoding and nothing for the others. */
static int decode_pending(sq_decoder *d, int rows)
{
    int V = d->m->cfg.vocab, P = 0;
    for (int r = 0; r < rows; r++) {
        if (d->done[r]) continue;
        if (r != P) tg_kv_cache_move(&d->kv, P, r, d->len[r] - 1);
        d->row[P++] = r;
    }
    while (P > 0) {
        for (int p = 0; p < P; p++) {
            int r = d->row[p];
            d->pos[p] = d->len[r] - 1;
            d->ids[p] = d->seq[(size_t)r * d->tmax + d->pos[p]];
        }
        tg_tape_reset(d->tape);
        tg_tensor *ids = tg_tensor_from_dtype(d->tape, TG_I32, d->ids, 2, (int[]){P, 1});
        tg_tensor *pos = tg_tensor_from_dtype(d->tape, TG_I32, d->pos, 1, (int[]){P});
        tg_tensor *logits = tg_model_decode(d->tape, d->m, &d->kv, ids, pos, d->hm);
        if (!logits) return forward_fail(d);
        for (int p = 0; p < P; p++) {
            int r = d->row[p];
            int32_t tok = argmax(logits->data + (size_t)p * V, V);
            d->seq[(size_t)r * d->tmax + d->len[r]++] = tok;
            d->done[r] = tok == SQ_EOS || d->len[r] >= d->tmax;
        }
        for (int p = 0; p < P; p++) {
            if (!d->done[d->row[p]]) continue;
            while (P > p + 1 && d->done[d->row[P - 1]]) P--;
            if (--P > p) {
                d->row[p] = d->row[P];
                tg_kv_cache_move(&d->kv, p, P, d->len[d->row[p]] - 1);
            }
        }
    }
    return 0;
}

/* One teacher-forced pass over ex[0..k): row r gets BOS x SEP and the
 * greedy output as far as it is known (the target up to the first wrong
 * prediction, then that prediction); done when the output is complete. The
 * pass is a prefill: cache row r holds the positions before that last token. */
static int teacher_forced(sq_decoder *d, const sq_example *ex, int k)
{
    int V = d->m->cfg.vocab;
    sq_batch_fill(&d->batch, ex, k);
    int T = d->batch.T;
    tg_tape_reset(d->tape);
    tg_tensor *ids = tg_tensor_from_dtype(d->tape, TG_I32, d->batch.ids, 2, (int[]){k, T});
    tg_tensor *lens = tg_tensor_from_dtype(d->tape, TG_I32, d->batch.lens, 1, (int[]){k});
    tg_model_opts o = {.lens = lens, .head_mask = d->hm};
    tg_tensor *logits = tg_model_prefill(d->tape, d->m, &d->kv, ids, &o);
    if (!logits) return forward_fail(d);
    for (int r = 0; r < k; r++) {
        int32_t *seq = d->seq + (size_t)r * d->tmax;
        int L = sq_sequence(&ex[r], seq), n = ex[r].n;
        d->len[r] = L;
        d->done[r] = true;
        for (int t = n + 1; t < L - 1; t++) {
            int32_t tok = argmax(logits->data + ((size_t)r * T + t) * V, V);
            if (tok != seq[t + 1]) {
                seq[t + 1] = tok;
                d->len[r] = t + 2;
                d->done[r] = tok == SQ_EOS || d->len[r] >= d->tmax;
                break;
            }
        }
    }
    return 0;
}

const char *sq_token_str(int32_t tok, char *buf, size_t len)
{
    static const char *const special[] = {"PAD", "BOS", "SEP", "EOS"};
    if (tok >= 0 && tok < SQ_SYM0) return special[tok];
    snprintf(buf, len, "%d", (int)(tok - SQ_SYM0));
    return buf;
}

void sq_print_tokens(FILE *f, const int32_t *tok, int n)
{
    char buf[16];
    for (int i = 0; i < n; i++) fprintf(f, "%s%s", i ? " " : "", sq_token_str(tok[i], buf, sizeof buf));
}

static void print_failure(FILE *f, const sq_example *e, const int32_t *got, int n_got)
{
    fprintf(f, "  input    ");
    for (int i = 0; i < e->n; i++) fprintf(f, "%s%d", i ? " " : "", (int)e->src[i]);
    fprintf(f, "\n  expected ");
    for (int i = 0; i < e->m; i++) fprintf(f, "%s%d", i ? " " : "", (int)e->tgt[i]);
    fprintf(f, " EOS\n  got      ");
    sq_print_tokens(f, got, n_got);
    fprintf(f, "%s\n\n", n_got == 0 || got[n_got - 1] != SQ_EOS ? "  (no EOS)" : "");
}

int sq_evaluate(sq_decoder *d, const sq_dataset *set, const tg_tensor *head_mask, sq_eval_result *r,
                FILE *f, int show)
{
    memset(r, 0, sizeof *r);
    d->hm = head_mask;
    int shown = 0;
    for (int i0 = 0; i0 < set->count; i0 += d->cap) {
        int k = set->count - i0 < d->cap ? set->count - i0 : d->cap;
        const sq_example *ex = set->ex + i0;
        if (teacher_forced(d, ex, k) || decode_pending(d, k)) return -1;
        for (int b = 0; b < k; b++) {
            const int32_t *got = d->seq + (size_t)b * d->tmax + ex[b].n + 2;
            int n_got = d->len[b] - ex[b].n - 2, ok = 0;
            for (int i = 0; i <= ex[b].m; i++) {
                int32_t want = i < ex[b].m ? SQ_SYM0 + ex[b].tgt[i] : SQ_EOS;
                ok += i < n_got && got[i] == want;
            }
            bool exact = ok == ex[b].m + 1 && n_got == ex[b].m + 1;
            r->examples++;
            r->exact += exact;
            r->tokens += ex[b].m + 1;
            r->tokens_ok += ok;
            if (!exact && f && shown < show) {
                print_failure(f, &ex[b], got, n_got);
                shown++;
            }
        }
    }
    return 0;
}

bool sq_generate_fits(const sq_decoder *d, int n)
{
    return n + 2 < d->tmax;
}

int sq_generate(sq_decoder *d, const int32_t *src, int n, int32_t *out, int *n_out)
{
    if (!sq_generate_fits(d, n)) {
        tg_error_set("the input has %d symbols; the model takes at most %d (Tmax %d)", n,
                     d->tmax - 3, d->tmax);
        return -1;
    }
    int32_t *seq = d->seq;
    seq[0] = SQ_BOS;
    for (int i = 0; i < n; i++) seq[1 + i] = SQ_SYM0 + src[i];
    seq[n + 1] = SQ_SEP;
    d->len[0] = n + 2;
    d->done[0] = false;
    d->hm = NULL;
    tg_tape_reset(d->tape);
    tg_tensor *ids = tg_tensor_from_dtype(d->tape, TG_I32, seq, 2, (int[]){1, n + 1});
    if (!tg_model_prefill(d->tape, d->m, &d->kv, ids, NULL)) return forward_fail(d);
    if (decode_pending(d, 1)) return -1;
    *n_out = d->len[0] - n - 2;
    memcpy(out, seq + n + 2, (size_t)*n_out * sizeof *out);
    return 0;
}
