/* examples/seqtask with the attention variants, end to end: the reverse task
 * trained to >= 99% exact-sequence accuracy with grouped-query attention
 * (2 key/value heads for 4 query heads) and with RoPE instead of a position
 * table; the model file keeps the variant
 * (eval reads it back); heads and attn label each head's
 * key/value group; the LLaMA-style options and weight tying round-trip
 * through the model file; bad flags are refused. Small models, one thread. */
#include <sys/stat.h>

#define SEQTASK_CAPTURE_STDOUT
#include "seqtask_util.h"

/* Under the sanitizers or an emulator a step costs 10-50 times as much, and
 * a loaded machine took the RoPE run past the suite's time limit: there the
 * sequences are at most 4 long, evaluated on 200 every 50 steps, which
 * reaches the same 99% in about a third of the steps. */
#if defined(__SANITIZE_ADDRESS__) || defined(TG_EMULATED)
#define REVERSE_SIZE "--max-len 4 --eval-every 50 --eval-size 200 "
#else
#define REVERSE_SIZE "--max-len 6 --eval-every 100 --eval-size 500 "
#endif
#define REVERSE "--task reverse --symbols 8 --min-len 1 " REVERSE_SIZE "--layers 2 --d-model 32 --heads 4 " \
                "--d-ff 64 --batch 32 --lr 3e-3 --steps 1500 --target-acc 0.99 --threads 1"

static void setup(void) { seqtask_setup("tg_test_train_variants", false); }
static void teardown(void) { seqtask_teardown(); }

TestSuite(train_variants, .init = setup, .fini = teardown, .timeout = 300);

/* The last "exact-sequence accuracy X%" of the output. */
static double reported_acc(const char *text)
{
    const char *s = NULL;
    for (const char *p = strstr(text, "exact-sequence"); p; p = strstr(p + 1, "exact-sequence")) s = p;
    cr_assert_not_null(s, "no accuracy in:\n%s", text);
    while (*s && (*s < '0' || *s > '9')) s++;
    return atof(s) / 100;
}

/* The start of a safetensors file's JSON header (its metadata and names). */
static void model_header(const char *rel, char *buf, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s is missing", path);
    memset(buf, 0, len);
    cr_assert_gt(fread(buf, 1, len - 1, f), 8);
    fclose(f);
    memmove(buf, buf + 8, len - 8);
}

static long file_size(const char *rel)
{
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

Test(train_variants, reverse_with_grouped_query_attention)
{
    cr_assert_eq(run("train " REVERSE " --kv-heads 2 --out g"), 0, "%s", err_text);
    cr_assert(strstr(err_text, "reached the target accuracy"), "%s", err_text);
    cr_assert_eq(run("eval --model g/model.safetensors --eval-size 500 --threads 1"), 0, "%s", err_text);
    cr_assert_geq(reported_acc(out_text), 0.99, "%s", out_text);
    cr_assert_eq(run("heads --model g/model.safetensors --eval-size 50 --threads 1"), 0, "%s", err_text);
    cr_assert(strstr(out_text, "layer head  kv") && strstr(out_text, "    1    3   1  "), "%s", out_text);
    cr_assert_eq(run("attn --model g/model.safetensors --input '2 7 1' --png a.png --threads 1"), 0, "%s",
                 err_text);
    cr_assert_gt(file_size("a.png"), 1000);
}

Test(train_variants, reverse_with_rope)
{
    cr_assert_eq(run("train " REVERSE " --pos rope --out r"), 0, "%s", err_text);
    cr_assert(strstr(err_text, "reached the target accuracy"), "%s", err_text);
    cr_assert_eq(run("eval --model r/model.safetensors --eval-size 500 --threads 1"), 0, "%s", err_text);
    cr_assert_geq(reported_acc(out_text), 0.99, "%s", out_text);
    /* no position table: RoPE is the model's only source of positions */
    char head[4096];
    model_header("r/model.safetensors", head, sizeof head);
    cr_assert_null(strstr(head, "pos_emb"), "the RoPE model has a pos_emb");
    cr_assert(strstr(head, "\"pos\":\"rope\""), "the model file does not say pos rope");
    cr_assert_eq(run("attn --model r/model.safetensors --input '3 0 6 2' --png a.png --threads 1"), 0, "%s",
                 err_text);
    cr_assert_gt(file_size("a.png"), 1000);
}

/* --alibi is kept by the model file: eval and generate build the same model. */
Test(train_variants, alibi_round_trips)
{
    cr_assert_eq(run("train " REVERSE " --pos none --alibi --steps 30 --eval-every 30 --out a"), 0, "%s", err_text);
    cr_assert_eq(run("eval --model a/model.safetensors --eval-size 50 --threads 1"), 0, "%s", err_text);
    cr_assert_eq(run("generate --model a/model.safetensors --input '1 2 3' --threads 1"), 0, "%s", err_text);
    char head[4096];
    model_header("a/model.safetensors", head, sizeof head);
    cr_assert(strstr(head, "\"alibi\":\"true\"") && strstr(head, "\"pos\":\"none\""), "%s", head);
}

/* The LLaMA-style options and weight tying are kept by the model file: eval,
 * generate and resume build the same model; a tied file holds no head. */
Test(train_variants, llama_options_and_tying_round_trip)
{
    cr_assert_eq(run("train " REVERSE " --norm rms --ffn swiglu --no-bias --pos rope --kv-heads 2 --steps 30 "
                     "--eval-every 30 --out l"), 0, "%s", err_text);
    cr_assert_eq(run("eval --model l/model.safetensors --eval-size 50 --threads 1"), 0, "%s", err_text);
    cr_assert_eq(run("generate --model l/model.safetensors --input '1 2 3' --threads 1"), 0, "%s", err_text);
    char head[8192];
    model_header("l/model.safetensors", head, sizeof head);
    cr_assert(strstr(head, "\"norm\":\"rms\"") && strstr(head, "\"ffn\":\"swiglu\"") &&
              strstr(head, "\"no_bias\":\"true\"") && strstr(head, "blocks.0.ff.gate_proj.weight") &&
              !strstr(head, ".bias\""), "%s", head);
    cr_assert_eq(run("train " REVERSE " --tie --steps 30 --eval-every 30 --out t"), 0, "%s", err_text);
    cr_assert_eq(run("train --resume t/checkpoint.safetensors --steps 40 --threads 1"), 0, "%s", err_text);
    cr_assert_eq(run("generate --model t/model.safetensors --input '1 2 3' --threads 1"), 0, "%s", err_text);
    model_header("t/model.safetensors", head, sizeof head);
    cr_assert(strstr(head, "\"tie\":\"true\"") && strstr(head, "tok_emb.weight") && !strstr(head, "\"head."),
              "%s", head);
}

Test(train_variants, bad_variant_flags_are_refused)
{
    cr_assert_eq(run("train " REVERSE " --kv-heads 3 --steps 1 --out x"), 2, "%s", err_text);
    cr_assert(strstr(err_text, "--kv-heads 3 does not divide --heads 4"), "%s", err_text);
    cr_assert_eq(run("train " REVERSE " --pos sinusoid --steps 1 --out x"), 2, "%s", err_text);
    cr_assert(strstr(err_text, "--pos") && strstr(err_text, "rope"), "%s", err_text);
    cr_assert_eq(run("train " REVERSE " --ffn relu --steps 1 --out x"), 2, "%s", err_text);
    cr_assert(strstr(err_text, "--ffn 'relu' is not allowed") && strstr(err_text, "swiglu"), "%s", err_text);
    cr_assert_eq(run("train " REVERSE " --norm batch --steps 1 --out x"), 2, "%s", err_text);
    cr_assert(strstr(err_text, "--norm") && strstr(err_text, "rms"), "%s", err_text);
}

/* Autocast's bfloat16 products train reverse as float32's do; the weights
 * and the files stay float32, and the run's precision is in its metadata. */
Test(train_variants, reverse_with_bfloat16_products)
{
    cr_assert_eq(run("train " REVERSE " --precision bf16 --out h"), 0, "%s", err_text);
    cr_assert(strstr(err_text, "reached the target accuracy") && strstr(err_text, "bf16"), "%s", err_text);
    cr_assert_eq(run("eval --model h/model.safetensors --eval-size 500 --threads 1"), 0, "%s", err_text);
    cr_assert_geq(reported_acc(out_text), 0.99, "%s", out_text);
    static char head[65536];
    model_header("h/checkpoint.safetensors", head, sizeof head);
    cr_assert(strstr(head, "\"precision\":\"bf16\"") && strstr(head, "\"F32\"") && !strstr(head, "\"BF16\""), "%s",
              head);
    cr_assert_neq(run("train " REVERSE " --precision f8 --out x"), 0);
    cr_assert(strstr(err_text, "--precision") && strstr(err_text, "f8"), "%s", err_text);
}

/* float16 adds dynamic loss scaling: its state and the steps it skipped are
 * in the checkpoint, and a resume carries them on. */
Test(train_variants, float16_keeps_its_loss_scale_across_a_resume)
{
    cr_assert_eq(run("train " REVERSE " --precision f16 --steps 30 --eval-every 30 --save-every 10 --out f"), 0, "%s",
                 err_text);
    cr_assert(strstr(out_text, "loss scale "), "%s", out_text);
    static char head[65536];
    model_header("f/checkpoint.safetensors", head, sizeof head);
    cr_assert(strstr(head, "\"optim.grad_scaler.scale\"") && strstr(head, "\"skipped_steps\"") &&
                  strstr(head, "\"precision\":\"f16\""),
              "%s", head);
    cr_assert_eq(run("train --resume f/checkpoint.safetensors --steps 40 --threads 1"), 0, "%s", err_text);
    cr_assert(strstr(out_text, "step 40,"), "%s", out_text);
}
