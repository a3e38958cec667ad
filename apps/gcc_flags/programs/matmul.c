/* Dense double-precision matrix multiply C = A * B, naive i-j-k loop nest.
 * Interchange, unrolling, vectorisation and alignment flags matter here. */
#include "common.h"

int main(int argc, char **argv) {
    long n = arg_or(argc, argv, 320);
    double *a = malloc(sizeof(double) * n * n), *b = malloc(sizeof(double) * n * n);
    double *c = calloc((size_t)(n * n), sizeof(double));
    if (!a || !b || !c) return 2;
    for (long i = 0; i < n * n; i++) { a[i] = rng_unit() - 0.5; b[i] = rng_unit() - 0.5; }
    double t0 = now_s();
    for (long i = 0; i < n; i++)
        for (long j = 0; j < n; j++) {
            double s = 0.0;
            for (long k = 0; k < n; k++) s += a[i * n + k] * b[k * n + j];
            c[i * n + j] = s;
        }
    double t1 = now_s();
    double sum = 0.0, trace = 0.0, wsum = 0.0;
    for (long i = 0; i < n * n; i++) { sum += c[i]; wsum += c[i] * (double)(i % 7); }
    for (long i = 0; i < n; i++) trace += c[i * n + i];
    printf("time_s %.9f\nsum %.12e\nwsum %.12e\ntrace %.12e\nc17 %.12e\n", t1 - t0, sum, wsum, trace, c[17 % (n * n)]);
    free(a); free(b); free(c);
    return 0;
}
