/* Shared helpers of the bundled gcc_flags benchmarks (written for ensemble-tuner).
 * Every program prints "key value" lines: "time_s" is the kernel time measured
 * here, every other line is output that the tuner compares against the -O2 build.
 * The kernel time is the process's CPU time (the programs are single-threaded):
 * on a shared, oversubscribed machine wall time also counts the time the
 * process waits for a core, which varied by +-30% here, CPU time by +-4%. */
#ifndef ENSEMBLE_BENCH_COMMON_H
#define ENSEMBLE_BENCH_COMMON_H
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 199309L
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* xorshift64*: deterministic inputs, identical for every build */
static uint64_t rng_state = 88172645463325252ull;
static uint64_t rng_next(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}
static double rng_unit(void) { return (double)(rng_next() >> 11) * (1.0 / 9007199254740992.0); }

static long arg_or(int argc, char **argv, long fallback) {
    return argc > 1 ? strtol(argv[1], NULL, 10) : fallback;
}
#endif
