/* 3D 7-point Jacobi stencil on a float grid, several sweeps, ping-pong buffers. */
#include "common.h"

#define IDX(i, j, k) (((i) * n + (j)) * n + (k))

int main(int argc, char **argv) {
    long n = arg_or(argc, argv, 112);
    int sweeps = 40;
    float *u = malloc(sizeof(float) * n * n * n), *v = malloc(sizeof(float) * n * n * n);
    if (!u || !v) return 2;
    for (long i = 0; i < n * n * n; i++) { u[i] = (float)rng_unit(); v[i] = u[i]; }
    const float c0 = 0.4f, c1 = 0.1f;
    double t0 = now_s();
    for (int s = 0; s < sweeps; s++) {
        for (long i = 1; i < n - 1; i++)
            for (long j = 1; j < n - 1; j++)
                for (long k = 1; k < n - 1; k++)
                    v[IDX(i, j, k)] = c0 * u[IDX(i, j, k)]
                        + c1 * (u[IDX(i - 1, j, k)] + u[IDX(i + 1, j, k)] + u[IDX(i, j - 1, k)]
                                + u[IDX(i, j + 1, k)] + u[IDX(i, j, k - 1)] + u[IDX(i, j, k + 1)]);
        float *t = u; u = v; v = t;
    }
    double t1 = now_s();
    double sum = 0.0, wsum = 0.0;
    for (long i = 0; i < n * n * n; i++) { sum += u[i]; wsum += u[i] * (double)(i % 13); }
    printf("time_s %.9f\nsum %.9e\nwsum %.9e\ncenter %.7e\n", t1 - t0, sum, wsum, u[IDX(n / 2, n / 2, n / 2)]);
    free(u); free(v);
    return 0;
}
