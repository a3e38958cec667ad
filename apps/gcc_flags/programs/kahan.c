/* The planted miscompile: compensated (Kahan) summation and a NaN census.
 * Both are correct C under IEEE semantics and both break under value-unsafe
 * flags: -fassociative-math / -funsafe-math-optimizations / -ffast-math let
 * gcc simplify the compensation term (t - s) - y to zero, and
 * -ffinite-math-only lets it fold isnan() to false.  The output check must
 * reject those builds as INVALID. */
#include "common.h"
#include <math.h>

int main(int argc, char **argv) {
    long n = arg_or(argc, argv, 4000000);
    float *x = malloc(sizeof(float) * n);
    if (!x) return 2;
    for (long i = 0; i < n; i++) x[i] = (i % 1000 == 999) ? NAN : (float)(1.0 + 1e-4 * rng_unit());
    double t0 = now_s();
    float s = 0.0f, comp = 0.0f;
    long nans = 0;
    for (long i = 0; i < n; i++) {
        if (isnan(x[i])) { nans++; continue; }
        float y = x[i] - comp;
        float t = s + y;
        comp = (t - s) - y;
        s = t;
    }
    double t1 = now_s();
    printf("time_s %.9f\nkahan_sum %.6e\nnan_count %ld\n", t1 - t0, (double)s, nans);
    free(x);
    return 0;
}
