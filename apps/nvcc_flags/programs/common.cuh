// Shared helpers of the bundled nvcc_flags programs (written for ensemble-tuner).
// Each program: argv[1] = output file (raw float32 result, compared with the
// -O3 build), argv[2] = optional problem size.  It prints "time_ms X" (median
// of the timed kernel runs, CUDA events) and "checksum Y".
#ifndef ENSEMBLE_NVCC_COMMON_CUH
#define ENSEMBLE_NVCC_COMMON_CUH
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                              \
    do {                                                                         \
        cudaError_t err_ = (call);                                               \
        if (err_ != cudaSuccess) {                                               \
            fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(err_), \
                    __FILE__, __LINE__);                                         \
            exit(3);                                                             \
        }                                                                        \
    } while (0)

static unsigned long long bench_rng = 88172645463325252ull;
static float bench_unit() {  // xorshift64*, deterministic inputs
    bench_rng ^= bench_rng >> 12;
    bench_rng ^= bench_rng << 25;
    bench_rng ^= bench_rng >> 27;
    return (float)((bench_rng * 2685821657736338717ull) >> 40) * (1.0f / 16777216.0f);
}

// Time `reps` launches of fn() after one warm-up; returns the median in ms.
template <typename F>
static float time_median_ms(F fn, int reps) {
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    fn();
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    std::vector<float> ms(reps);
    for (int r = 0; r < reps; r++) {
        CHECK(cudaEventRecord(a));
        fn();
        CHECK(cudaEventRecord(b));
        CHECK(cudaEventSynchronize(b));
        CHECK(cudaEventElapsedTime(&ms[r], a, b));
    }
    CHECK(cudaGetLastError());
    std::sort(ms.begin(), ms.end());
    return ms[reps / 2];
}

static void finish(const char *path, const std::vector<float> &out, float ms) {
    double sum = 0.0;
    for (size_t i = 0; i < out.size(); i++) sum += (double)out[i] * (double)((i % 7) + 1);
    if (path) {
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(out.data(), sizeof(float), out.size(), f) != out.size()) {
            fprintf(stderr, "cannot write %s\n", path);
            exit(4);
        }
        fclose(f);
    }
    printf("time_ms %.6f\nchecksum %.9e\nelements %zu\n", ms, sum, out.size());
}
#endif
