/*
 * fill.cuh - --fill-random on the GPU (fill.cu), called by the CUDA backend's
 * weight_load for the holes of a sparse synthetic checkpoint (model/synth.h).
 */
#ifndef DSV4_BACKEND_CUDA_FILL_CUH
#define DSV4_BACKEND_CUDA_FILL_CUH

#include "backend/cuda/common.cuh"

/* Allocate w->dev (and w->dev_scale when the scales are generated too) and
 * generate w->synth's bytes there instead of reading the checkpoint; checks
 * that every generated value is finite. */
dsv4_status cuda_weight_fill(dsv4_backend *be, dsv4_w *w, char *err, size_t errlen);

#endif
