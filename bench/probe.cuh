/*
 * probe.cuh - what the standalone device probes (bench/*_probe.cu, compiled alone with nvcc) share: a CUDA call
 * checked, its error printed with the place and the program ended.
 */
#pragma once

#include <cstdio>
#include <cstdlib>

#define CKE(x)                                                                                                         \
    do {                                                                                                               \
        cudaError_t e_ = (x);                                                                                          \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));                                \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)
