// Does wgmma give the bits of mma.sync? (F16 in, F32 accumulate), and FP8 wgmma N=8 vs N=64 per column.
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <vector>
#include <cstring>

__device__ __forceinline__ void mma_f16(float *c, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
__device__ __forceinline__ uint64_t desc128(uint32_t saddr)
{
    return (uint64_t)((saddr >> 4) & 0x3fffu) | (uint64_t)1 << 16 | (uint64_t)(1024 >> 4) << 32 | (uint64_t)1 << 62;
}
// wgmma m64n64k16 f16, A regs, B smem
__device__ __forceinline__ void wg_f16_64(float *d, const uint32_t *a, uint64_t bd, int acc)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %38, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, "
                 "{%32,%33,%34,%35}, %36, p, 1, 1, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(bd), "n"(0), "r"(acc));
}
__device__ __forceinline__ void wg8_8(float *d, uint64_t ad, uint64_t bd)
{
    asm volatile("wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0,%1,%2,%3}, %4, %5, 0, 1, 1;\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "l"(ad), "l"(bd));
}
__device__ __forceinline__ void wg8_64(float *d, uint64_t ad, uint64_t bd)
{
    asm volatile("wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, 0, 1, 1;\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "l"(ad), "l"(bd));
}
#define FENCE() asm volatile("wgmma.fence.sync.aligned;" ::: "memory")
#define COMMIT_WAIT() do { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); } while (0)

// A: 64 x K (K = 16 * KS) f16 row-major; B: 64 tokens x K f16; out: [64 rows][64 tok] both ways
// KS k16 steps chained (first fresh)
template <int KS>
__global__ void k_f16(const __half *A, const __half *B, float *o_sync, float *o_wg)
{
    __shared__ __align__(1024) uint8_t sb[KS][64 * 128]; // per k16 step: 64 token rows x 128 bytes, swizzled (only 32 B used per row)
    const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5, g = lane >> 2, t = lane & 3;
    // fill B: token n, k16 step s: 16 halves at bytes 0..31 of the row (chunks 0,1 swizzled)
    for (int e = tid; e < KS * 64 * 16; e += 128) {
        int s = e / (64 * 16), n = (e / 16) % 64, k = e % 16;
        int byte = k * 2, c = byte / 16;
        *(__half *)(&sb[s][n * 128 + ((c ^ (n & 7)) * 16) + byte % 16]) = B[n * (16 * KS) + 16 * s + k];
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    auto h2 = [&](int r, int k) { __half2 v; v.x = A[r * 16 * KS + k]; v.y = A[r * 16 * KS + k + 1]; return *(uint32_t *)&v; };
    auto b2 = [&](int n, int k) { __half2 v; v.x = B[n * 16 * KS + k]; v.y = B[n * 16 * KS + k + 1]; return *(uint32_t *)&v; };
    // mma.sync: warp w rows 16w.., every n tile of 8
    const int r0 = 16 * w + g;
    for (int nt = 0; nt < 8; nt++) {
        float c[4] = {0, 0, 0, 0};
        for (int s = 0; s < KS; s++) {
            int k0 = 16 * s;
            mma_f16(c, h2(r0, k0 + 2 * t), h2(r0 + 8, k0 + 2 * t), h2(r0, k0 + 2 * t + 8), h2(r0 + 8, k0 + 2 * t + 8),
                    b2(8 * nt + g, k0 + 2 * t), b2(8 * nt + g, k0 + 2 * t + 8));
        }
        o_sync[r0 * 64 + 8 * nt + 2 * t] = c[0];
        o_sync[r0 * 64 + 8 * nt + 2 * t + 1] = c[1];
        o_sync[(r0 + 8) * 64 + 8 * nt + 2 * t] = c[2];
        o_sync[(r0 + 8) * 64 + 8 * nt + 2 * t + 1] = c[3];
    }
    float d[32];
    for (int j = 0; j < 32; j++) d[j] = 0;
    for (int s = 0; s < KS; s++) {
        int k0 = 16 * s;
        uint32_t a[4] = {h2(r0, k0 + 2 * t), h2(r0 + 8, k0 + 2 * t), h2(r0, k0 + 2 * t + 8), h2(r0 + 8, k0 + 2 * t + 8)};
        FENCE();
        wg_f16_64(d, a, desc128((uint32_t)__cvta_generic_to_shared(sb[s])), s > 0);
        COMMIT_WAIT();
    }
    for (int j = 0; j < 32; j++) {
        int c = j >> 2, e = j & 3;
        int r = r0 + (e >= 2 ? 8 : 0), n = 8 * c + 2 * t + (e & 1);
        o_wg[r * 64 + n] = d[j];
    }
}

// FP8: A 64x32, B 64 tokens x 32 (codes), wgmma N=64 vs 8 N=8 launches of 8 tokens
__global__ void k_fp8(const uint8_t *A, const uint8_t *B, float *o64, float *o8)
{
    __shared__ __align__(1024) uint8_t sa[64 * 128];
    __shared__ __align__(1024) uint8_t sbb[64 * 128];
    const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5, g = lane >> 2, t = lane & 3;
    for (int e = tid; e < 64 * 128; e += 128) {
        int r = e / 128, byte = e % 128, c = byte / 16;
        sa[r * 128 + ((c ^ (r & 7)) * 16) + byte % 16] = A[r * 128 + byte];
        sbb[r * 128 + ((c ^ (r & 7)) * 16) + byte % 16] = B[r * 128 + byte];
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    const uint64_t ad = desc128((uint32_t)__cvta_generic_to_shared(sa));
    const int r0 = 16 * w + g;
    for (int s = 0; s < 4; s++) {
        float d[32];
        for (int j = 0; j < 32; j++) d[j] = 0;
        FENCE();
        wg8_64(d, ad + 2 * s, desc128((uint32_t)__cvta_generic_to_shared(sbb)) + 2 * s);
        COMMIT_WAIT();
        for (int j = 0; j < 32; j++) {
            int c = j >> 2, e = j & 3;
            int r = r0 + (e >= 2 ? 8 : 0), n = 8 * c + 2 * t + (e & 1);
            o64[(s * 64 + r) * 64 + n] = d[j];
        }
        for (int nt = 0; nt < 8; nt++) {
            float q[4] = {0, 0, 0, 0};
            FENCE();
            wg8_8(q, ad + 2 * s, desc128((uint32_t)__cvta_generic_to_shared(sbb + nt * 1024)) + 2 * s);
            COMMIT_WAIT();
            for (int e = 0; e < 4; e++) {
                int r = r0 + (e >= 2 ? 8 : 0), n = 8 * nt + 2 * t + (e & 1);
                o8[(s * 64 + r) * 64 + n] = q[e];
            }
        }
    }
}

static uint64_t rs = 88172645463325252ull;
static uint32_t rnd() { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return (uint32_t)rs; }
static float e2m1(uint32_t c) { static const float v[8] = {0, .5f, 1, 1.5f, 2, 3, 4, 6}; return (c & 8 ? -1 : 1) * v[c & 7]; }

template <int KS> static int run_f16(int mode, int trials)
{
    const int K = 16 * KS;
    std::vector<__half> A(64 * K), B(64 * K);
    __half *dA, *dB; float *d1, *d2;
    cudaMalloc(&dA, 64 * K * 2); cudaMalloc(&dB, 64 * K * 2); cudaMalloc(&d1, 64 * 64 * 4); cudaMalloc(&d2, 64 * 64 * 4);
    std::vector<float> o1(4096), o2(4096);
    long bad = 0, tot = 0;
    for (int tr = 0; tr < trials; tr++) {
        for (int i = 0; i < 64 * K; i++) {
            // A: E2M1 * 2^-6 (mode 0/1) or random f16 (mode 2); B: E4M3 codes as f16 (mode 0) or random f16 over a wide range (1, 2)
            float a = mode == 2 ? ldexpf((float)(rnd() % 2048) / 1024.0f * ((rnd() & 1) ? 1 : -1), (int)(rnd() % 20) - 10) : ldexpf(e2m1(rnd() & 15), -6);
            float b;
            if (mode == 0) { __nv_fp8_e4m3 q; uint8_t code = rnd() & 0xff; if ((code & 0x7f) == 0x7f) code ^= 1; memcpy(&q, &code, 1); b = (float)q; }
            else b = ldexpf((float)(rnd() % 2048) / 1024.0f * ((rnd() & 1) ? 1 : -1), (int)(rnd() % 24) - 14);
            A[i] = __float2half(a); B[i] = __float2half(b);
        }
        cudaMemcpy(dA, A.data(), 64 * K * 2, cudaMemcpyHostToDevice);
        cudaMemcpy(dB, B.data(), 64 * K * 2, cudaMemcpyHostToDevice);
        k_f16<KS><<<1, 128>>>(dA, dB, d1, d2);
        cudaMemcpy(o1.data(), d1, 4096 * 4, cudaMemcpyDeviceToHost);
        cudaMemcpy(o2.data(), d2, 4096 * 4, cudaMemcpyDeviceToHost);
        for (int i = 0; i < 4096; i++) { tot++; if (memcmp(&o1[i], &o2[i], 4)) { if (bad < 3) printf("  f16 KS=%d mode %d: [%d] sync %.9g wg %.9g\n", KS, mode, i, o1[i], o2[i]); bad++; } }
    }
    printf("f16 KS=%d mode %d: %ld of %ld differ (%s)\n", KS, mode, bad, tot, cudaGetErrorString(cudaGetLastError()));
    return bad != 0;
}

int main()
{
    int f = 0;
    for (int m = 0; m < 3; m++) { f |= run_f16<2>(m, 200); f |= run_f16<8>(m, 200); f |= run_f16<1>(m, 100); }
    // fp8
    std::vector<uint8_t> A(64 * 128), B(64 * 128);
    uint8_t *dA, *dB; float *d1, *d2;
    cudaMalloc(&dA, 8192); cudaMalloc(&dB, 8192); cudaMalloc(&d1, 4 * 4096 * 4); cudaMalloc(&d2, 4 * 4096 * 4);
    std::vector<float> o1(4 * 4096), o2(4 * 4096);
    long bad = 0;
    for (int tr = 0; tr < 200; tr++) {
        for (int i = 0; i < 8192; i++) { uint8_t c = rnd(); if ((c & 0x7f) == 0x7f) c ^= 1; A[i] = c; c = rnd(); if ((c & 0x7f) == 0x7f) c ^= 1; B[i] = c; }
        cudaMemcpy(dA, A.data(), 8192, cudaMemcpyHostToDevice); cudaMemcpy(dB, B.data(), 8192, cudaMemcpyHostToDevice);
        k_fp8<<<1, 128>>>(dA, dB, d1, d2);
        cudaMemcpy(o1.data(), d1, 4 * 4096 * 4, cudaMemcpyDeviceToHost); cudaMemcpy(o2.data(), d2, 4 * 4096 * 4, cudaMemcpyDeviceToHost);
        for (int i = 0; i < 4 * 4096; i++) if (memcmp(&o1[i], &o2[i], 4)) { if (bad < 3) printf("  fp8 [%d] n64 %.9g n8 %.9g\n", i, o1[i], o2[i]); bad++; }
    }
    printf("fp8 n64 vs n8: %ld differ (%s)\n", bad, cudaGetErrorString(cudaGetLastError()));
    return f || bad;
}
