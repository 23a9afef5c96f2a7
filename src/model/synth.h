/*
 * synth.h - sparse synthetic checkpoints and --fill-random (a benchmarking aid).
 *
 * `dsv4 mkmodel --sparse` writes a checkpoint whose matrices (every weight
 * matrix, embedding and head included, and the scales of the quantized ones)
 * are holes in the safetensors files: they take no disk blocks and read as
 * zeros. It marks the checkpoint in config.json ("dsv4_synthetic_sparse":
 * true) and lists every hole with its conditioning in dsv4_synthetic.json.
 * Such a checkpoint is refused at open unless dsv4_engine_opts.fill_random is
 * set; then each hole gets a dsv4_synth here, and the backend's weight_load
 * generates the tensor in its own memory (the GPU with a kernel) instead of
 * reading it. Small tensors (norms, biases, HC parameters, ape, sinks,
 * tid2eid, the NVFP4 global scales) are real bytes, read as usual.
 *
 * The generated values come from a counter-based hash of (seed, tensor name,
 * element index) (synth_gen.h), so they are deterministic and identical on
 * every backend; they are not the bytes a non-sparse mkmodel run writes, but
 * they follow the same conditioning.
 */
#ifndef DSV4_MODEL_SYNTH_H
#define DSV4_MODEL_SYNTH_H

#include <stdbool.h>
#include <stdint.h>

#include "model/safetensors.h"
#include "model/weights.h"

/* Name of the side file listing the holes. */
#define DSV4_SYNTH_FILE "dsv4_synthetic.json"

/* The generator's key of a tensor: FNV-1a of its name from the seed, mixed. */
uint64_t dsv4_synth_key(uint64_t seed, const char *name);
/* float multiplier of the generator for a standard deviation. */
float dsv4_synth_mul(double std);

/* Whether DIR is a sparse synthetic checkpoint (config.json says so or the side file exists). */
bool dsv4_synth_is_sparse(const char *dir);

/* At open, after binding: refuse a sparse checkpoint without fill_random (and
 * fill_random on any other checkpoint), else give every hole listed in the
 * side file its generator (w->synth), checking that it is a weight dsv4 binds,
 * in a format the generator makes, of the checkpoint's byte size, and that
 * every listed hole was found. verbose: one line on stderr. */
dsv4_status dsv4_synth_attach(const char *dir, const dsv4_st *st, bool fill_random, dsv4_weights *w, int verbose,
                              char *err, size_t errlen);

/* Bytes [first, first + n) of a generated tensor's elements, on the host
 * (the CPU backend and tests; the GPU's kernel computes the same bytes). */
void dsv4_synth_fill_host(const dsv4_synth *s, void *dst, uint64_t first, uint64_t n);

#endif
