// A small loop nest for the gcc-flags fixtures (written for these tests).
#include <cstdio>
static double work(int n) {
  double s = 0.0;
  for (int i = 1; i < n; ++i)
    for (int j = 1; j < 64; ++j) s += (i % j) * 0.5 / j;
  return s;
}
int main() { std::printf("%f\n", work(20000)); return 0; }
