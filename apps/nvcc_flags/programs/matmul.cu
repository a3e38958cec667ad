// Matrix multiply C = A * B (float) in the four memory variants of Bruel et al.
// (CCPE 2017): global or shared memory, coalesced or uncoalesced accesses.
// Select with -DMM_SHARED=0/1 -DMM_COALESCED=0/1 (the app passes them).
#include "common.cuh"

#ifndef MM_SHARED
#define MM_SHARED 0
#endif
#ifndef MM_COALESCED
#define MM_COALESCED 1
#endif
#define TILE 16

#if !MM_SHARED
__global__ void mm_global(const float *a, const float *b, float *c, int n) {
#if MM_COALESCED
    int col = blockIdx.x * TILE + threadIdx.x, row = blockIdx.y * TILE + threadIdx.y;  // x walks columns
#else
    int row = blockIdx.x * TILE + threadIdx.x, col = blockIdx.y * TILE + threadIdx.y;  // x walks rows: strided
#endif
    if (row >= n || col >= n) return;
    float s = 0.0f;
    for (int k = 0; k < n; k++) s += a[row * n + k] * b[k * n + col];
    c[row * n + col] = s;
}
#else
__global__ void mm_shared(const float *a, const float *b, float *c, int n) {
    __shared__ float ta[TILE][TILE + 1], tb[TILE][TILE + 1];
#if MM_COALESCED
    int tx = threadIdx.x, ty = threadIdx.y;
#else
    int tx = threadIdx.y, ty = threadIdx.x;  // consecutive threads load a column: strided global loads
#endif
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float s = 0.0f;
    for (int t = 0; t < n; t += TILE) {
        ta[ty][tx] = (row < n && t + tx < n) ? a[row * n + t + tx] : 0.0f;
        tb[ty][tx] = (col < n && t + ty < n) ? b[(t + ty) * n + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; k++) s += ta[ty][k] * tb[k][tx];
        __syncthreads();
    }
    if (row < n && col < n) c[row * n + col] = s;
}
#endif

int main(int argc, char **argv) {
    int n = argc > 2 ? atoi(argv[2]) : 1024;
    size_t bytes = sizeof(float) * n * n;
    std::vector<float> ha(n * n), hb(n * n), hc(n * n);
    for (auto &x : ha) x = bench_unit() - 0.5f;
    for (auto &x : hb) x = bench_unit() - 0.5f;
    float *a, *b, *c;
    CHECK(cudaMalloc(&a, bytes));
    CHECK(cudaMalloc(&b, bytes));
    CHECK(cudaMalloc(&c, bytes));
    CHECK(cudaMemcpy(a, ha.data(), bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(b, hb.data(), bytes, cudaMemcpyHostToDevice));
    dim3 block(TILE, TILE), grid((n + TILE - 1) / TILE, (n + TILE - 1) / TILE);
    float ms = time_median_ms([&] {
#if MM_SHARED
        mm_shared<<<grid, block>>>(a, b, c, n);
#else
        mm_global<<<grid, block>>>(a, b, c, n);
#endif
    }, 7);
    CHECK(cudaMemcpy(hc.data(), c, bytes, cudaMemcpyDeviceToHost));
    finish(argc > 1 ? argv[1] : nullptr, hc, ms);
    return 0;
}
