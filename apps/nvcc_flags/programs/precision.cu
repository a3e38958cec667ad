// The planted miscompile of the nvcc flags tuner (written for ensemble-tuner;
// the CUDA counterpart of gcc_flags' kahan.c).  Correct under IEEE single
// precision, which is what nvcc compiles by default (--ftz=false,
// --prec-div=true), and measurably wrong under the value-unsafe flags:
//
// part 1, subnormal round trip (--ftz=true, --use_fast_math):
//   x in [1, 2) is scaled into the subnormal range, t = x * 2^-127, stored,
//   and a second kernel scales it back, y = t * 2^127.  IEEE keeps 23 of x's
//   24 bits (relative error <= 2^-23); flush-to-zero stores t = 0, so y = 0.
//
// part 2, division residuals (--prec-div=false, --use_fast_math):
//   q = a / b, r = fma(-q, b, a) (exact), out = r / a * 2^24.  For the
//   correctly rounded q, |out| <= 1; a q one ulp off moves out by 1 to 2,
//   far beyond the checking tolerance (rtol 1e-3).  --prec-div=false
//   compiles the division to div.full.f32 (up to 2 ulp), --use_fast_math to
//   div.approx.ftz.f32.
//
// The output (raw float32, n values of part 1 then n of part 2) is what the
// runtime objective compares with the -O3 build.  apps/nvcc_flags/precision.py
// computes the same values on the CPU (NumPy float32), with and without the
// flags' effects.
#include <cmath>

#include "common.cuh"

__global__ void scale_down(const float *__restrict__ x, float *__restrict__ t, float down, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) t[i] = x[i] * down;
}

__global__ void scale_up(const float *__restrict__ t, float *__restrict__ y, float up, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = t[i] * up;
}

__global__ void div_residual(const float *__restrict__ a, const float *__restrict__ b, float *__restrict__ out,
                             int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float q = a[i] / b[i];
        float r = fmaf(-q, b[i], a[i]);
        out[i] = r / a[i] * 16777216.0f;
    }
}

int main(int argc, char **argv) {
    int n = argc > 2 ? atoi(argv[2]) : (1 << 22);
    size_t bytes = sizeof(float) * (size_t)n;
    std::vector<float> hx(n), ha(n), hb(n), out(2 * (size_t)n);
    for (int i = 0; i < n; i++) hx[i] = 1.0f + bench_unit();
    for (int i = 0; i < n; i++) {
        ha[i] = 1.0f + bench_unit();
        hb[i] = 1.0f + bench_unit();
    }
    const float down = ldexpf(1.0f, -127), up = ldexpf(1.0f, 127);
    float *x, *t, *y, *a, *b, *r;
    CHECK(cudaMalloc(&x, bytes));
    CHECK(cudaMalloc(&t, bytes));
    CHECK(cudaMalloc(&y, bytes));
    CHECK(cudaMalloc(&a, bytes));
    CHECK(cudaMalloc(&b, bytes));
    CHECK(cudaMalloc(&r, bytes));
    CHECK(cudaMemcpy(x, hx.data(), bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(a, ha.data(), bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(b, hb.data(), bytes, cudaMemcpyHostToDevice));
    int block = 256, grid = (n + block - 1) / block;
    auto run = [&] {
        scale_down<<<grid, block>>>(x, t, down, n);
        scale_up<<<grid, block>>>(t, y, up, n);
        div_residual<<<grid, block>>>(a, b, r, n);
    };
    float ms = time_median_ms(run, 5);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(out.data(), y, bytes, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(out.data() + n, r, bytes, cudaMemcpyDeviceToHost));
    finish(argc > 1 ? argv[1] : nullptr, out, ms);
    return 0;
}
