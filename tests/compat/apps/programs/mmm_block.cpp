// Blocked matrix multiply for the mmm_tuner fixture (written for these tests).
#include <cstdio>
#include <vector>
#ifndef BLOCK_SIZE
#define BLOCK_SIZE 4
#endif
int main() {
  const int n = 96, b = BLOCK_SIZE * 8;
  std::vector<double> a(n * n, 1.5), x(n * n, 0.5), c(n * n, 0.0);
  for (int ii = 0; ii < n; ii += b)
    for (int kk = 0; kk < n; kk += b)
      for (int i = ii; i < ii + b && i < n; ++i)
        for (int k = kk; k < kk + b && k < n; ++k)
          for (int j = 0; j < n; ++j) c[i * n + j] += a[i * n + k] * x[k * n + j];
  std::printf("%f\n", c[n + 1]);
  return 0;
}
