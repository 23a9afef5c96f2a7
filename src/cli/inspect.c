/*
 * inspect.c - `dsv4 inspect`: what a checkpoint holds and what it costs.
 *
 *   dsv4 inspect [-m DIR] [--json]
 *
 * Loads config, declared quantisation and every tensor exactly as the engine
 * does (so a broken checkpoint fails here with the same first problem), then
 * reports the config in brief, the format and bytes of each component, the
 * total, whether it fits the GPUs present, and the weight bytes streamed per
 * decode token with the memory-bandwidth roofline at batch 1, 8 and 16
 * (MODEL.md §6): at batch B the shared weights are read once per step and a
 * routed expert once per step if any token picks it, E(1-(1-k/E)^B) experts
 * per layer under uniform routing.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "engine/engine.h"
#include "model/config.h"
#include "model/quant_config.h"
#include "model/safetensors.h"
#include "model/synth.h"
#include "model/weights.h"

/* H200: datasheet 4.8 TB/s; device-to-device copy measured at ~4.3 TB/s. */
static const double BW_PEAK = 4.8e12, BW_MEASURED = 4.3e12;
static const double H200_BYTES = 143771.0 * 1048576.0; /* 140.4 GiB as the device reports */

typedef struct {
    const char *name;
    uint64_t bytes;
    char fmt[64];
} component;

static uint64_t sum_ws(const dsv4_w *const *ws, int n)
{
    uint64_t b = 0;
    for (int i = 0; i < n; i++) b += dsv4_w_bytes(ws[i]);
    return b;
}

static uint64_t layer_hc(const dsv4_layer_w *L)
{
    const dsv4_w *ws[] = {&L->hc_attn_fn, &L->hc_attn_base, &L->hc_attn_scale,
                          &L->hc_ffn_fn,  &L->hc_ffn_base,  &L->hc_ffn_scale};
    return sum_ws(ws, 6);
}

static uint64_t layer_attn(const dsv4_layer_w *L)
{
    const dsv4_w *ws[] = {&L->attn_norm, &L->ffn_norm, &L->wq_a,      &L->q_norm, &L->wq_b,
                          &L->wkv,       &L->kv_norm,  &L->attn_sink, &L->wo_a,   &L->wo_b};
    return sum_ws(ws, 10);
}

static uint64_t layer_cmp(const dsv4_layer_w *L)
{
    const dsv4_w *ws[] = {&L->cmp.ape,     &L->cmp.wkv,     &L->cmp.wgate,     &L->cmp.norm,   &L->idx_cmp.ape,
                          &L->idx_cmp.wkv, &L->idx_cmp.wgate, &L->idx_cmp.norm, &L->idx_wq_b, &L->idx_weights_proj};
    return sum_ws(ws, 10);
}

static uint64_t layer_shared(const dsv4_layer_w *L)
{
    const dsv4_w *ws[] = {&L->sh_w1, &L->sh_w2, &L->sh_w3};
    return sum_ws(ws, 3);
}

/* GPUs of mem bytes the weights the engine loads (all but the MTP block's; ex of them routed experts) need (1, the
 * expert-parallel ranks, or 0: dsv4_ep_ranks_needed with a GPU's whole memory for its free memory, so an estimate
 * from above: the engine decides on what is free at start-up). */
static int gpus_needed(const dsv4_weights *w, uint64_t ex, double mem, int n_gpus)
{
    return dsv4_ep_ranks_needed(dsv4_weights_run_bytes(w), ex, w->n_experts, (int64_t)mem, n_gpus);
}

/* GPUs present, from nvidia-smi when it exists: total bytes of the first. */
static int gpus_present(double *mem_bytes, char *name, size_t n)
{
    FILE *p = popen("nvidia-smi --query-gpu=name,memory.total --format=csv,noheader,nounits 2>/dev/null", "r");
    if (!p) return 0;
    char line[256];
    int count = 0;
    while (fgets(line, sizeof line, p)) {
        char *comma = strrchr(line, ',');
        if (!comma) continue;
        if (count == 0) {
            *comma = 0;
            snprintf(name, n, "%s", line);
            *mem_bytes = atof(comma + 1) * 1048576.0;
        }
        count++;
    }
    pclose(p);
    return count;
}

int cmd_inspect(int argc, char **argv)
{
    const char *C = "inspect", *dir = DSV4_DEFAULT_MODEL;
    int json_out = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json_out = 1;
        else if ((!strcmp(argv[i], "-m") || !strcmp(argv[i], "--model")) && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: dsv4 inspect [-m DIR] [--json]\n");
            return 0;
        } else return cli_fail(C, "unknown option %s (usage: dsv4 inspect [-m DIR] [--json])", argv[i]);
    }
    char err[1024];
    dsv4_config cfg;
    dsv4_quant_scheme q;
    dsv4_st *st = NULL;
    dsv4_weights w;
    if (dsv4_config_load(dir, &cfg, err, sizeof err) || dsv4_quant_scheme_load(dir, &q, err, sizeof err) ||
        dsv4_st_open(dir, &st, err, sizeof err) || dsv4_weights_bind(&cfg, &q, st, &w, err, sizeof err)) {
        dsv4_st_close(st);
        return cli_fail(C, "%s", err);
    }
    const int E = cfg.n_routed_experts, K = cfg.n_experts_per_tok;
    uint64_t attn = 0, cmp = 0, hc = 0, router = 0, shared = 0, experts = 0, mtp = 0;
    char f_attn[64] = "-", f_shared[64] = "-", f_exp[64] = "-", f_cmp[64] = "-", f_head[64], f_embed[64];
    for (int l = 0; l < cfg.n_layers; l++) {
        const dsv4_layer_w *L = &w.layers[l];
        attn += layer_attn(L);
        cmp += layer_cmp(L);
        hc += layer_hc(L);
        router += dsv4_w_bytes(&L->gate) + dsv4_w_bytes(&L->gate_bias) + dsv4_w_bytes(&L->tid2eid);
        shared += layer_shared(L);
        experts += dsv4_layer_expert_bytes(L, E);
        if (l == 0) {
            dsv4_w_format_str(&L->wq_b, f_attn, sizeof f_attn);
            dsv4_w_format_str(&L->sh_w1, f_shared, sizeof f_shared);
            dsv4_w_format_str(&L->exp_w1[0], f_exp, sizeof f_exp);
        }
        if (L->kind != DSV4_ATTN_SLIDING && !strcmp(f_cmp, "-")) dsv4_w_format_str(&L->cmp.wkv, f_cmp, sizeof f_cmp);
    }
    if (w.mtp.present) {
        const dsv4_mtp_w *M = &w.mtp;
        const dsv4_w *ws[] = {&M->e_proj, &M->h_proj, &M->enorm, &M->hnorm, &M->norm, &M->hc_head_fn, &M->hc_head_base,
                              &M->hc_head_scale, &M->block.gate, &M->block.gate_bias};
        mtp = sum_ws(ws, 10) + layer_attn(&M->block) + layer_hc(&M->block) + layer_shared(&M->block) +
              dsv4_layer_expert_bytes(&M->block, E);
    }
    const dsv4_w *headw[] = {&w.norm, &w.hc_head_fn, &w.hc_head_base, &w.hc_head_scale};
    uint64_t head = dsv4_w_bytes(&w.head) + sum_ws(headw, 4), embed = dsv4_w_bytes(&w.embed);
    uint64_t main_total = attn + cmp + hc + router + shared + experts + head + embed;
    uint64_t file_total = dsv4_st_total_bytes(st);
    dsv4_w_format_str(&w.head, f_head, sizeof f_head);
    dsv4_w_format_str(&w.embed, f_embed, sizeof f_embed);

    /* bytes per decode step at batch B (one embedding row per token, one
     * tid2eid row per token in hash layers; the router's tables otherwise) */
    double row_embed = (double)embed / cfg.vocab_size, per_expert = E ? (double)experts / cfg.n_layers / E : 0;
    double tid_rows = 0;
    for (int l = 0; l < cfg.n_layers; l++)
        if (cfg.layer_hash[l]) tid_rows += (double)dsv4_w_bytes(&w.layers[l].tid2eid);
    double dense = (double)(attn + cmp + hc + router + shared + head) - tid_rows;
    const int batches[3] = {1, 8, 16};
    double step_bytes[3], per_tok[3];
    for (int i = 0; i < 3; i++) {
        int B = batches[i];
        double touched = E * (1.0 - pow(1.0 - (double)K / E, B));
        step_bytes[i] = dense + B * row_embed + B * tid_rows / cfg.vocab_size +
                        cfg.n_layers * touched * per_expert;
        per_tok[i] = step_bytes[i] / B;
    }
    double gpu_mem = 0;
    char gpu_name[256] = "";
    int n_gpus = gpus_present(&gpu_mem, gpu_name, sizeof gpu_name);
    int csa = dsv4_config_count_kind(&cfg, DSV4_ATTN_CSA), hca = dsv4_config_count_kind(&cfg, DSV4_ATTN_HCA);
    const char *experts_fmt = w.n_nvfp4 ? "NVFP4" : w.n_mxfp4 ? "MXFP4" : w.layers[0].exp_w1[0].fmt == DSV4_WF_FP8 ? "FP8" : "BF16";
    const char *scheme = w.n_fp8 || w.n_mxfp4 || w.n_nvfp4 ? (w.n_nvfp4 ? "NVFP4 experts, FP8 attention (ModelOpt)"
                                                                         : w.n_mxfp4 ? "FP8 + MXFP4 (DeepSeek stock)"
                                                                                     : "FP8")
                                                          : "unquantized";
    component comps[] = {
        {"embedding", embed, ""},          {"attention projections", attn, ""}, {"compressors + indexers", cmp, ""},
        {"hyper-connections", hc, "F32"},  {"router", router, ""},             {"shared experts", shared, ""},
        {"routed experts", experts, ""},   {"head + final norm", head, ""},    {"MTP block", mtp, ""},
    };
    snprintf(comps[0].fmt, 64, "%s", f_embed);
    snprintf(comps[1].fmt, 64, "%s", f_attn);
    snprintf(comps[2].fmt, 64, "%s", f_cmp);
    snprintf(comps[4].fmt, 64, "BF16 + F32/I64");
    snprintf(comps[5].fmt, 64, "%s", f_shared);
    snprintf(comps[6].fmt, 64, "%s", f_exp);
    snprintf(comps[7].fmt, 64, "%s", f_head);
    snprintf(comps[8].fmt, 64, "%s",
             mtp                ? "as the layers; not loaded"
             : w.mtp_ignored[0] ? "incomplete: ignored"
                                : "absent");
    if (w.mtp_ignored[0])
        fprintf(stderr, "dsv4 inspect: the MTP block is incomplete and is ignored: %s\n", w.mtp_ignored);
    const size_t nc = sizeof comps / sizeof comps[0];
    const bool sparse = dsv4_synth_is_sparse(dir);

    if (json_out) {
        json_t *j = json_object(), *jc = json_array(), *jr = json_array();
        for (size_t i = 0; i < nc; i++)
            json_array_append_new(jc, json_pack("{s:s, s:I, s:s}", "name", comps[i].name, "bytes",
                                                (json_int_t)comps[i].bytes, "format", comps[i].fmt));
        for (int i = 0; i < 3; i++)
            json_array_append_new(jr, json_pack("{s:i, s:f, s:f, s:f, s:f}", "batch", batches[i], "step_bytes",
                                                step_bytes[i], "bytes_per_token", per_tok[i], "tok_s_peak",
                                                batches[i] * BW_PEAK / step_bytes[i], "tok_s_measured_bw",
                                                batches[i] * BW_MEASURED / step_bytes[i]));
        json_object_set_new(j, "model_dir", json_string(dir));
        json_object_set_new(j, "layers", json_integer(cfg.n_layers));
        json_object_set_new(j, "csa_layers", json_integer(csa));
        json_object_set_new(j, "hca_layers", json_integer(hca));
        json_object_set_new(j, "hidden", json_integer(cfg.dim));
        json_object_set_new(j, "vocab", json_integer(cfg.vocab_size));
        json_object_set_new(j, "routed_experts", json_integer(E));
        json_object_set_new(j, "experts_per_token", json_integer(K));
        json_object_set_new(j, "scheme", json_string(scheme));
        json_object_set_new(j, "experts_format", json_string(experts_fmt));
        json_object_set_new(j, "declared_experts", json_string(dsv4_expert_format_name(q.experts)));
        json_object_set_new(j, "components", jc);
        json_object_set_new(j, "main_model_bytes", json_integer((json_int_t)main_total));
        json_object_set_new(j, "checkpoint_bytes", json_integer((json_int_t)file_total));
        json_object_set_new(j, "tensors", json_integer((json_int_t)dsv4_st_count(st)));
        json_object_set_new(j, "synthetic_sparse", json_boolean(sparse));
        json_object_set_new(j, "gpus", json_integer(n_gpus));
        json_object_set_new(j, "fits_one_gpu", n_gpus ? json_boolean(main_total < gpu_mem) : json_null());
        json_object_set_new(j, "fits_one_h200", json_boolean(main_total < H200_BYTES));
        json_object_set_new(j, "gpus_needed",
                            n_gpus ? json_integer(gpus_needed(&w, experts, gpu_mem, n_gpus)) : json_null());
        json_object_set_new(j, "h200s_needed", json_integer(gpus_needed(&w, experts, H200_BYTES, 16)));
        json_object_set_new(j, "decode_roofline", jr);
        json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        putchar('\n');
        json_decref(j);
    } else {
        printf("%s: DeepSeek-V4, %d layers (%d sliding, %d CSA, %d HCA), hidden %d, vocab %d\n", dir, cfg.n_layers,
               cfg.n_layers - csa - hca, csa, hca, cfg.dim, cfg.vocab_size);
        printf("  attention %d heads x %d (rope %d), q_lora %d, %d output groups x %d, window %d; indexer %d x %d, "
               "top-%d\n",
               cfg.n_heads, cfg.head_dim, cfg.rope_dim, cfg.q_lora_rank, cfg.o_groups, cfg.o_lora_rank, cfg.window,
               cfg.index_n_heads, cfg.index_head_dim, cfg.index_topk);
        printf("  MoE %d routed (top-%d) + %d shared, inter %d; hc %d streams; format: %s\n", E, K,
               cfg.n_shared_experts, cfg.moe_inter_dim, cfg.hc_mult, scheme);
        if (sparse)
            printf("  sparse synthetic checkpoint (dsv4 mkmodel --sparse): its matrices are holes; engines generate "
                   "them with --fill-random\n");
        /* GiB for real models, MiB for small ones */
        const bool gib = main_total >= (1ull << 32);
        const double unit = gib ? 1073741824.0 : 1048576.0;
        printf("\n  %-24s %12s  %s\n", "component", gib ? "GiB" : "MiB", "format");
        for (size_t i = 0; i < nc; i++) printf("  %-24s %12.3f  %s\n", comps[i].name, comps[i].bytes / unit, comps[i].fmt);
        printf("  %-24s %12.3f\n  %-24s %12.3f  (%zu tensors)\n", "main model", main_total / unit, "checkpoint",
               file_total / unit, dsv4_st_count(st));
        if (n_gpus)
            printf("\n  GPUs: %d x %s (%.1f GiB): the main model %s one\n", n_gpus, gpu_name, gpu_mem / 1073741824.0,
                   main_total < gpu_mem ? "fits on" : "does not fit on");
        else
            printf("\n  GPUs: none found; on one H200 (140.4 GiB) the main model %s\n",
                   main_total < H200_BYTES ? "fits" : "does not fit");
        /* what dsv4 serve does without --ep (engine.c): one GPU, or expert parallelism over the fewest that hold it */
        const int need = n_gpus ? gpus_needed(&w, experts, gpu_mem, n_gpus) : gpus_needed(&w, experts, H200_BYTES, 16);
        const char *of = n_gpus ? "of these GPUs" : "H200s";
        if (need > 1)
            printf("  with its routed experts split by expert parallelism it needs %d %s (dsv4 takes --ep %d "
                   "itself when --ep is not given)\n",
                   need, of, need);
        else if (need == 0)
            printf("  no split of its routed experts over %s %s holds it\n", n_gpus ? "the" : "16", of);
        printf("\n  decode roofline (weights only; H200 %.1f TB/s peak, %.1f TB/s measured copy)\n", BW_PEAK / 1e12,
               BW_MEASURED / 1e12);
        printf("  %6s %16s %16s %14s %14s\n", "batch", "MB per step", "MB per token", "tok/s peak", "tok/s 4.3TB/s");
        for (int i = 0; i < 3; i++)
            printf("  %6d %16.1f %16.1f %14.1f %14.1f\n", batches[i], step_bytes[i] / 1e6, per_tok[i] / 1e6,
                   batches[i] * BW_PEAK / step_bytes[i], batches[i] * BW_MEASURED / step_bytes[i]);
    }
    dsv4_weights_free(&w);
    dsv4_st_close(st);
    return 0;
}
