/* Sort 64-bit keys: an introsort-style quicksort with insertion sort for small
 * ranges, then an order-sensitive checksum of the result (exact comparison). */
#include "common.h"

static void insertion(uint64_t *x, long lo, long hi) {
    for (long i = lo + 1; i <= hi; i++) {
        uint64_t v = x[i];
        long j = i - 1;
        while (j >= lo && x[j] > v) { x[j + 1] = x[j]; j--; }
        x[j + 1] = v;
    }
}

static void quick(uint64_t *x, long lo, long hi) {
    while (hi - lo > 24) {
        long mid = lo + (hi - lo) / 2;
        uint64_t a = x[lo], b = x[mid], c = x[hi];
        uint64_t p = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
        long i = lo, j = hi;
        while (i <= j) {
            while (x[i] < p) i++;
            while (x[j] > p) j--;
            if (i <= j) { uint64_t t = x[i]; x[i] = x[j]; x[j] = t; i++; j--; }
        }
        if (j - lo < hi - i) { quick(x, lo, j); lo = i; } else { quick(x, i, hi); hi = j; }
    }
    insertion(x, lo, hi);
}

int main(int argc, char **argv) {
    long n = arg_or(argc, argv, 1000000);
    uint64_t *x = malloc(sizeof(uint64_t) * n);
    if (!x) return 2;
    for (long i = 0; i < n; i++) x[i] = rng_next() % 1000000007ull;
    double t0 = now_s();
    quick(x, 0, n - 1);
    double t1 = now_s();
    uint64_t h = 1469598103934665603ull;
    long sorted = 1;
    for (long i = 0; i < n; i++) {
        h = (h ^ x[i]) * 1099511628211ull;
        if (i && x[i - 1] > x[i]) sorted = 0;
    }
    printf("time_s %.9f\nsorted %ld\nhash %llu\nmedian %llu\n", t1 - t0, sorted, (unsigned long long)h,
           (unsigned long long)x[n / 2]);
    free(x);
    return 0;
}
