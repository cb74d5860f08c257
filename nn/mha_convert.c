/* tapegrad: attention checkpoints across the two storage modes
 * (tg_mha_convert, nn/attention.h). A fused layer's
 * "<p>in_proj_weight" [(H + 2 Hkv) dh, D] (rows: H query heads, then Hkv key
 * heads, then Hkv value heads) and "<p>in_proj_bias" are the per-head
 * layer's "<p>heads.<h>.q_proj.*" stacked, then its key and value heads:
 * "<p>heads.<h>.{k,v}_proj.*" when Hkv = H, "<p>kv_heads.<g>.{k,v}_proj.*"
 * when grouped. */
#include <stdio.h>
#include <string.h>

#include "attention.h"

static const char *const proj_names[3] = {"q_proj", "k_proj", "v_proj"};

/* The head counts of one conversion: H query heads, Hkv key/value heads. */
typedef struct conv_heads {
    int H, Hkv;
} conv_heads;

/* prefix[0, plen) + "<heads|kv_heads>.<h>.<q|k|v>_proj.<what>" for projection
 * s of head h (the grouped key/value heads' own names when Hkv < H), or
 * prefix + what when h < 0. */
static void part_name(char *name, const char *prefix, size_t plen, const conv_heads *c, int h, int s,
                      const char *what)
{
    const char *kind = s > 0 && c->Hkv < c->H ? "kv_heads" : "heads";
    if (h < 0) snprintf(name, TG_NN_NAME_MAX, "%.*s%s", (int)plen, prefix, what);
    else snprintf(name, TG_NN_NAME_MAX, "%.*s%s.%d.%s.%s", (int)plen, prefix, kind, h, proj_names[s], what);
}

/* name = "<prefix>[kv_]heads.<h>.<q|k|v>_proj.<weight|bias>" with the prefix
 * empty or ending in '.': the prefix length, h, and whether it is kv_. */
static bool is_head_part(const char *name, size_t *plen, int *h, bool *kv)
{
    for (const char *p = strstr(name, "heads."); p; p = strstr(p + 1, "heads.")) {
        char proj, kind[8];
        int end = 0;
        const char *start = p >= name + 3 && !strncmp(p - 3, "kv_", 3) ? p - 3 : p;
        if ((start == name || start[-1] == '.') && sscanf(p, "heads.%d.%c_proj.%7[a-z]%n", h, &proj, kind, &end) == 3 &&
            !p[end] && *h >= 0 && strchr("qkv", proj) && (!strcmp(kind, "weight") || !strcmp(kind, "bias"))) {
            *plen = (size_t)(start - name);
            *kv = start != p;
            return true;
        }
    }
    return false;
}

/* name = "<prefix><suffix>" with the prefix empty or ending in '.': the prefix length. */
static bool has_suffix(const char *name, const char *suffix, size_t *plen)
{
    size_t n = strlen(name), k = strlen(suffix);
    if (n < k || strcmp(name + n - k, suffix) || (n > k && name[n - k - 1] != '.')) return false;
    *plen = n - k;
    return true;
}

static int convert_fail(const char *name, const tg_tensor *x, const char *why)
{
    char sx[TG_SHAPE_STR];
    return tg_error_set("tg_mha_convert: '%s'%s%s %s", name, x ? " " : "", x ? tg_shape_str(x, sx) : "", why);
}

/* The first packed row of head h of projection s (0 q, 1 k, 2 v), in heads of dh rows. */
static size_t packed_row(const conv_heads *c, int s, int h, int dh)
{
    return ((size_t)(s == 0 ? 0 : s == 1 ? c->H : c->H + c->Hkv) + (size_t)h) * (size_t)dh;
}

/* "<prefix>in_proj_weight" w [(H + 2 Hkv) dh, D] (and its bias) -> per-head tensors in dst */
static int split_heads(tg_safetensors *dst, const tg_safetensors *src, const tg_tensor *w, size_t plen,
                       const conv_heads *c)
{
    char name[TG_NN_NAME_MAX];
    int per = c->H + 2 * c->Hkv;
    part_name(name, w->name, plen, c, -1, 0, "in_proj_bias");
    const tg_tensor *b = tg_st_get(src, name);
    if (w->ndim != 2 || w->shape[0] == 0 || w->shape[0] % per)
        return convert_fail(w->name, w, "is not [(n_heads + 2 n_kv_heads) * d_head, d_model]");
    if (b && (b->ndim != 1 || b->shape[0] != w->shape[0]))
        return convert_fail(b->name, b, "does not match in_proj_weight's rows");
    int D = w->shape[1], dh = w->shape[0] / per;
    for (int h = 0; h < c->H; h++)
        for (int s = 0; s < 3 && h < (s ? c->Hkv : c->H); s++) {
            size_t row = packed_row(c, s, h, dh);
            part_name(name, w->name, plen, c, h, s, "weight");
            if (tg_st_add_data(dst, name, w->data + row * (size_t)D, 2, (int[]){dh, D})) return -1;
            part_name(name, w->name, plen, c, h, s, "bias");
            if (b && tg_st_add_data(dst, name, b->data + row, 1, (int[]){dh})) return -1;
        }
    return 0;
}

/* "<prefix>q_proj_weight" [E, D] with k_proj_weight [Ekv, kdim] and
 * v_proj_weight [Ekv, vdim] (nn.MultiheadAttention when kdim or vdim != D,
 * Ekv = E there; and in_proj_bias [E + 2Ekv]) -> per-head tensors in dst */
static int split_separate(tg_safetensors *dst, const tg_safetensors *src, const tg_tensor *wq, size_t plen,
                          const conv_heads *c)
{
    static const char *const sep[3] = {"q_proj_weight", "k_proj_weight", "v_proj_weight"};
    char name[TG_NN_NAME_MAX];
    const tg_tensor *w[3], *b;
    part_name(name, wq->name, plen, c, -1, 0, "in_proj_bias");
    b = tg_st_get(src, name);
    int dh = wq->shape[0] / c->H;
    for (int s = 0; s < 3; s++) {
        part_name(name, wq->name, plen, c, -1, 0, sep[s]);
        w[s] = tg_st_get(src, name);
        if (!w[s] || w[s]->ndim != 2 || w[s]->shape[0] != (s ? c->Hkv : c->H) * dh || wq->shape[0] % c->H)
            return convert_fail(name, w[s], w[s] ? "is not [(n_heads or n_kv_heads) * d_head, width], d_head as "
                                                   "q_proj_weight's" : "is missing");
    }
    if (b && (b->ndim != 1 || b->shape[0] != (c->H + 2 * c->Hkv) * dh))
        return convert_fail(b->name, b, "is not [(n_heads + 2 n_kv_heads) * d_head]");
    for (int h = 0; h < c->H; h++)
        for (int s = 0; s < 3 && h < (s ? c->Hkv : c->H); s++) {
            int W = w[s]->shape[1];
            part_name(name, wq->name, plen, c, h, s, "weight");
            if (tg_st_add_data(dst, name, w[s]->data + (size_t)h * dh * W, 2, (int[]){dh, W})) return -1;
            part_name(name, wq->name, plen, c, h, s, "bias");
            if (b && tg_st_add_data(dst, name, b->data + packed_row(c, s, h, dh), 1, (int[]){dh})) return -1;
        }
    return 0;
}

/* add_bias_kv's "<prefix>bias_k" [1, 1, E] (or bias_v) <-> "<prefix>heads.<h>.bias_k" [dh]: to per-head,
 * x is the packed one; to fused, x is head 0's and the others join it. */
static int move_bias_kv(tg_safetensors *dst, const tg_safetensors *src, const tg_tensor *x, size_t plen,
                        const char *which, tg_mha_mode to, const conv_heads *c)
{
    char name[TG_NN_NAME_MAX];
    if (to == TG_MHA_PER_HEAD) {
        if (x->size % c->H) return convert_fail(x->name, x, "does not split into n_heads heads");
        int dh = (int)(x->size / c->H);
        for (int h = 0; h < c->H; h++) {
            snprintf(name, sizeof name, "%.*sheads.%d.%s", (int)plen, x->name, h, which);
            if (tg_st_add_data(dst, name, x->data + (size_t)h * dh, 1, (int[]){dh})) return -1;
        }
        return 0;
    }
    int dh = (int)x->size;
    snprintf(name, sizeof name, "%.*s%s", (int)plen, x->name, which);
    tg_tensor *y = tg_st_add_zeros(dst, name, 3, (int[]){1, 1, c->H * dh});
    for (int h = 0; y && h < c->H; h++) {
        snprintf(name, sizeof name, "%.*sheads.%d.%s", (int)plen, x->name, h, which);
        const tg_tensor *p = tg_st_get(src, name);
        if (!p || p->size != (size_t)dh) return convert_fail(name, p, p ? "differs from head 0's" : "is missing");
        memcpy(y->data + (size_t)h * dh, p->data, (size_t)dh * sizeof *p->data);
    }
    return y ? 0 : -1;
}

/* The per-head tensors of prefix[0, plen) in src -> in_proj_weight
 * [(H + 2 Hkv) dh, D] (and in_proj_bias) in dst */
static int join_heads(tg_safetensors *dst, const tg_safetensors *src, const char *prefix, size_t plen,
                      const conv_heads *c)
{
    char name[TG_NN_NAME_MAX];
    part_name(name, prefix, plen, c, 0, 0, "bias");
    bool bias = tg_st_get(src, name) != NULL;
    part_name(name, prefix, plen, c, 0, 0, "weight");
    const tg_tensor *q0 = tg_st_get(src, name);
    if (q0->ndim != 2) return convert_fail(name, q0, "is not [d_head, d_model]");
    int dh = q0->shape[0], D = q0->shape[1], R = (c->H + 2 * c->Hkv) * dh, W[3] = {D, D, D};
    for (int s = 1; s < 3; s++) {  /* kdim, vdim: head 0's key and value widths */
        part_name(name, prefix, plen, c, 0, s, "weight");
        const tg_tensor *x0 = tg_st_get(src, name);
        if (x0 && x0->ndim == 2) W[s] = x0->shape[1];
    }
    bool packed = W[1] == D && W[2] == D;
    static const char *const sep[3] = {"q_proj_weight", "k_proj_weight", "v_proj_weight"};
    tg_tensor *ws[3] = {NULL, NULL, NULL};  /* packed: in_proj_weight; else q, k, v_proj_weight [E, W] */
    for (int s = 0; s < (packed ? 1 : 3); s++) {
        part_name(name, prefix, plen, c, -1, 0, packed ? "in_proj_weight" : sep[s]);
        if (!(ws[s] = tg_st_add_zeros(dst, name, 2, packed ? (int[]){R, D} : (int[]){(s ? c->Hkv : c->H) * dh, W[s]})))
            return -1;
    }
    part_name(name, prefix, plen, c, -1, 0, "in_proj_bias");
    tg_tensor *b = bias ? tg_st_add_zeros(dst, name, 1, (int[]){R}) : NULL;
    if (bias && !b) return -1;
    for (int h = 0; h < c->H; h++)
        for (int s = 0; s < 3 && h < (s ? c->Hkv : c->H); s++) {
            size_t row = packed_row(c, s, h, dh);
            part_name(name, prefix, plen, c, h, s, "weight");
            const tg_tensor *x = tg_st_get(src, name);
            if (!x || x->ndim != 2 || x->shape[0] != dh || x->shape[1] != W[s]) {
                char why[64];
                snprintf(why, sizeof why, "differs from head 0's %s.weight", proj_names[s]);
                return convert_fail(name, x, x ? why : "is missing");
            }
            tg_real *to = packed ? ws[0]->data + row * D : ws[s]->data + (size_t)h * dh * W[s];
            memcpy(to, x->data, x->size * sizeof *x->data);
            part_name(name, prefix, plen, c, h, s, "bias");
            x = tg_st_get(src, name);
            if (!x != !bias || (x && (x->ndim != 1 || x->shape[0] != dh)))
                return convert_fail(name, x, x ? "is not [d_head], or head 0 has no biases" : "is missing");
            if (x) memcpy(b->data + row, x->data, x->size * sizeof *x->data);
        }
    return 0;
}

/* One tensor of src into dst: converted, left for its group, or copied. */
static int convert_one(tg_safetensors *dst, const tg_safetensors *src, const tg_tensor *x, tg_mha_mode to,
                       const conv_heads *c)
{
    char name[TG_NN_NAME_MAX];
    size_t plen;
    int h;
    bool kv;
    if (to == TG_MHA_PER_HEAD && has_suffix(x->name, "in_proj_weight", &plen))
        return split_heads(dst, src, x, plen, c);
    if (to == TG_MHA_PER_HEAD && has_suffix(x->name, "q_proj_weight", &plen))
        return split_separate(dst, src, x, plen, c);
    if (to == TG_MHA_PER_HEAD && (has_suffix(x->name, "k_proj_weight", &plen) ||
                                  has_suffix(x->name, "v_proj_weight", &plen))) {
        part_name(name, x->name, plen, c, -1, 0, "q_proj_weight");
        return tg_st_get(src, name) ? 0 : convert_fail(x->name, x, "has no q_proj_weight");
    }
    if (to == TG_MHA_PER_HEAD && has_suffix(x->name, "in_proj_bias", &plen)) {
        part_name(name, x->name, plen, c, -1, 0, "in_proj_weight");
        bool w = tg_st_get(src, name);
        part_name(name, x->name, plen, c, -1, 0, "q_proj_weight");
        return w || tg_st_get(src, name) ? 0 : convert_fail(x->name, x, "has no in_proj_weight");
    }
    for (int k = 0; k < 2; k++) {  /* add_bias_kv's bias_k, bias_v */
        const char *which = k ? "bias_v" : "bias_k";
        char head0[32];
        snprintf(head0, sizeof head0, "heads.0.%s", which);
        if (to == TG_MHA_PER_HEAD && has_suffix(x->name, which, &plen) && !strstr(x->name + plen, "heads."))
            return move_bias_kv(dst, src, x, plen, which, to, c);
        if (to == TG_MHA_FUSED && has_suffix(x->name, head0, &plen))
            return move_bias_kv(dst, src, x, plen, which, to, c);
        int hh;
        char rest[16];
        const char *p = strstr(x->name, "heads.");
        if (to == TG_MHA_FUSED && p && (p == x->name || p[-1] == '.') && sscanf(p, "heads.%d.%15s", &hh, rest) == 2 &&
            !strcmp(rest, which))
            return 0;  /* joined with head 0's */
    }
    if (to == TG_MHA_FUSED && is_head_part(x->name, &plen, &h, &kv)) {
        if (h >= (kv ? c->Hkv : c->H)) return convert_fail(x->name, x, kv ? "is a key/value head beyond n_kv_heads"
                                                                          : "is a head beyond n_heads");
        part_name(name, x->name, plen, c, 0, 0, "weight");
        if (!tg_st_get(src, name)) return convert_fail(name, NULL, "is missing");
        return strcmp(name, x->name) ? 0 : join_heads(dst, src, x->name, plen, c);
    }
    return tg_st_add(dst, x->name, x);
}

/* 0, or -1 naming the first attention tensor of src that is not of tg_real's
 * dtype (the rewrites copy tg_real rows; an I64 entry loads as itself). */
static int check_dtypes(const tg_safetensors *src)
{
    static const char *parts[] = {"in_proj_weight", "in_proj_bias", "q_proj_weight", "k_proj_weight",
                                  "v_proj_weight", "bias_k", "bias_v"};
    for (int i = 0; i < tg_st_count(src); i++) {
        const tg_tensor *x = tg_st_at(src, i);
        size_t plen;
        bool attn = strstr(x->name, "heads.") != NULL;
        for (size_t k = 0; !attn && k < sizeof parts / sizeof *parts; k++) attn = has_suffix(x->name, parts[k], &plen);
        if (attn && x->dtype != TG_REAL_DTYPE)
            return tg_error_set("tg_mha_convert: '%s' is %s, attention tensors are converted as %s", x->name,
                                tg_dtype_name(x->dtype), tg_dtype_name(TG_REAL_DTYPE));
    }
    return 0;
}

tg_safetensors *tg_mha_convert(const tg_safetensors *src, tg_mha_mode to, int n_heads, int n_kv_heads)
{
    if (!src) {
        tg_error_set("tg_mha_convert: the safetensors set is NULL");
        return NULL;
    }
    conv_heads c = {n_heads, n_kv_heads ? n_kv_heads : n_heads};
    if (n_heads <= 0 || n_heads > TG_MHA_MAX_HEADS || c.Hkv < 0 || (c.Hkv && n_heads % c.Hkv) ||
        (to != TG_MHA_FUSED && to != TG_MHA_PER_HEAD)) {
        tg_error_set("tg_mha_convert: n_heads %d must be in [1, %d], n_kv_heads %d divide it, and the mode be "
                     "fused or per-head", n_heads, TG_MHA_MAX_HEADS, n_kv_heads);
        return NULL;
    }
    if (check_dtypes(src)) return NULL;
    tg_safetensors *dst = tg_st_new();
    if (!dst) {
        tg_error_set("tg_mha_convert: out of memory");
        return NULL;
    }
    int rc = 0;
    for (int i = 0; rc == 0 && i < tg_st_meta_count(src); i++) {
        const char *k = tg_st_meta_key(src, i);
        rc = tg_st_set_meta(dst, k, tg_st_meta(src, k));
    }
    for (int i = 0; rc == 0 && i < tg_st_count(src); i++) rc = convert_one(dst, src, tg_st_at(src, i), to, &c);
    if (rc == 0) return dst;
    tg_st_free(dst);
    return NULL;
}
