"""Run a generated CUDA stencil kernel on the CPU (g++, C++20 threads), for checks without a GPU.

Why: the GPU machine is a scarce, one-call resource; this lets every
generated variant be checked against the NumPy reference here first.  The
kernel source is compiled unchanged as C++ with a few shims: ``__shared__``
becomes ``static`` (blocks run one after the other, so one copy serves the
block that is running), every thread of a block is a ``std::thread`` with
its own ``threadIdx``, and ``__syncthreads()`` is a ``std::barrier`` of the
block's threads, so the barriers of the shared-memory variants are exercised
for real.  The threads are started once per kernel and run its blocks one
after the other, meeting at that barrier before and after each block (the
block index is set in between), which cost a tenth of starting them anew
for each block (j3d7pt at 32^3: 0.07 s against 0.98 s a run).  ``__ldg``/``__stcs`` are plain loads and stores.

The asynchronous copies of ``zq`` with ``prefetch`` (``zq_async``,
``zq_commit``, ``zq_wait1``: ``cp.async`` on the device) are kept per thread
in commit groups and performed only when a wait retires their group
(``async_copies="deferred"``, the latest a device may land them: a read of
a slot before its wait sees the old value), or performed at once
(``"eager"``, the earliest: a copy into a slot still to be read this step
overwrites it); each copy's source must lie inside one of the kernel's
arrays (no read past the grid), and a thread must end with no copy in
flight (``zq_wait_all``).  A breach aborts the run.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import subprocess
import tempfile
from dataclasses import replace
from typing import Any

import numpy as np

from apps.stencil.cuda_gen import generate_cuda
from apps.stencil.runner import interior
from apps.stencil.spec import Stencil

SHIM = r"""
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>
struct dim3_ { unsigned x, y, z; };
static thread_local dim3_ threadIdx;
static dim3_ blockIdx, blockDim;
static std::barrier<>* g_bar;
#define __global__
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __shared__ static
#define __constant__ static
#define __syncthreads() g_bar->arrive_and_wait()
template <class T> static inline T __ldg(const T* p) { return *p; }
template <class T> static inline void __stcs(T* p, T v) { *p = v; }
#include <cstring>
#include <deque>
#include <utility>
struct zq_copy_ { void* d; const void* s; size_t n; };
static thread_local std::vector<zq_copy_> zq_open_;
static thread_local std::deque<std::vector<zq_copy_>> zq_groups_;
static std::vector<std::pair<const char*, const char*>> g_arrays;  // [begin, end) of every kernel argument
template <class T> static inline void zq_async(T* s, const T* g) {
  bool in = false;
  for (auto& a : g_arrays) in = in || ((const char*)g >= a.first && (const char*)(g + 1) <= a.second);
  if (!in) { fprintf(stderr, "zq_async: source outside every array\n"); abort(); }
#ifdef ZQ_EAGER
  *s = *g;  // landed at once; still in flight (for the checks) until a wait retires its group
#endif
  zq_open_.push_back({s, g, sizeof(T)});
}
template <class T> static inline void l2_prefetch(const T* p) {  // l2pf: only the address is checked
  bool in = false;
  for (auto& a : g_arrays) in = in || ((const char*)p >= a.first && (const char*)(p + 1) <= a.second);
  if (!in) { fprintf(stderr, "l2_prefetch: address outside every array\n"); abort(); }
}
static inline void zq_commit() { zq_groups_.push_back(std::move(zq_open_)); zq_open_.clear(); }
static inline void zq_land_(const std::vector<zq_copy_>& g) {
#ifndef ZQ_EAGER
  for (auto& c : g) memcpy(c.d, c.s, c.n);
#endif
  (void)g;
}
static inline void zq_wait1() {
  while (zq_groups_.size() > 1) {
    zq_land_(zq_groups_.front());
    zq_groups_.pop_front();
  }
}
static inline void zq_wait_all() {
  for (auto& g : zq_groups_) zq_land_(g);
  zq_groups_.clear();
}
static inline void zq_check_idle_() {
  bool busy = !zq_open_.empty();
  for (auto& g : zq_groups_) busy = busy || !g.empty();
  if (busy) { fprintf(stderr, "zq_async: copies still in flight when the thread ends\n"); abort(); }
  zq_groups_.clear();
}
"""


def gxx_available() -> bool:
    return shutil.which("g++") is not None


_GXX = ["g++", "-std=c++20", "-O1", "-w", "-pthread"]


@functools.cache
def _shim_dir(eager: bool) -> str | None:
    """A folder holding ``shim.h`` (``SHIM``) and its precompiled header for these g++ flags, or None when
    the header does not build (each kernel then carries the shim's text, as before).

    Why: parsing the shim's C++20 headers (<barrier>, <thread>, <deque>) was about 0.6 s of every kernel's
    1 s compile, and the CPU tests compile a few hundred kernels.  One folder per flag set: a precompiled
    header is only used with the macros it was built with (``-DZQ_EAGER`` changes the shim).  Removed at exit.
    """
    d = tempfile.mkdtemp(prefix="cuda-cpu-shim-")
    atexit.register(shutil.rmtree, d, True)
    with open(os.path.join(d, "shim.h"), "w") as f:
        f.write("#pragma once\n" + SHIM)
    eager_flag = ["-DZQ_EAGER"] if eager else []
    r = subprocess.run([*_GXX, *eager_flag, "-x", "c++-header", "-o", os.path.join(d, "shim.h.gch"),
                        os.path.join(d, "shim.h")], capture_output=True, text=True, check=False)
    return d if r.returncode == 0 else None


def check_case(name: str, opt: str, n: int = 32) -> None:
    """Option set ``opt`` of stencil ``name`` run on the CPU matches the NumPy reference on every output.

    Kernels with a dynamic shared array (``dsmem``, ``zq``) run with it made a
    static one of the bytes a launch passes (``stencil_cases.static_dsmem``):
    the emulator has no launch.  Skips where g++ is missing.
    """
    import pytest

    from apps.stencil.cstuner import cstuner_stencil
    from tests.apps.stencil_cases import cuda_config, static_dsmem

    if not gxx_available():
        pytest.skip("g++ not installed")
    st = cstuner_stencil(name, n)
    data = st.make_data(0)
    ref = st.reference(data)
    out = run_on_cpu(st, cuda_config(opt), data, generate=lambda s, c: static_dsmem(generate_cuda(s, c)))
    for o, r in ref.items():
        assert np.max(np.abs(out[o] - r)) <= 1e-10 * np.max(np.abs(r)), (name, opt, o)


def run_on_cpu(st: Stencil, config: dict[str, Any], data: dict[str, np.ndarray],
               generate: Any = None, async_copies: str = "deferred") -> dict[str, np.ndarray]:
    """Interior of every output of ``generate(st, config)`` (default ``generate_cuda``) run on ``data``;
    ``async_copies``: when ``zq_async`` copies land, ``"deferred"`` (at the wait) or ``"eager"`` (at once)."""
    if async_copies not in ("deferred", "eager"):
        raise ValueError(f"async_copies={async_copies!r}: use 'deferred' or 'eager'")
    k = (generate or generate_cuda)(st, config)
    T = st.ctype
    sizes = {a: data[a].size for a in st.inputs}
    sizes.update({a: data[a].size for a, _ in st.line_arrays})
    npad = int(np.prod(st.padded_shape))
    sizes.update({o: npad for o in k.outputs})
    sizes["coefg"] = max(1, len(st.coefs))
    main = ["int main(int argc, char** argv) {", "  (void)argc;"]
    for i, a in enumerate(k.args):
        main.append(f"  std::vector<{T}> A{i}({sizes[a]});")
        main.append(f'  {{ FILE* f = fopen(argv[1 + {i}], "rb"); if (!f || fread(A{i}.data(), sizeof({T}), '
                    f"{sizes[a]}, f) != {sizes[a]}) return 2; fclose(f); }}")
        main.append(f"  g_arrays.emplace_back((const char*)A{i}.data(), (const char*)(A{i}.data() + {sizes[a]}));")
    if k.constants:
        main.append(f"  for (int i = 0; i < {len(st.coefs)}; ++i) c_coef[i] = A{len(k.args) - 1}[i];")
    (gx, gy, gz), (bx, by, bz) = k.grid, k.block
    call_args = ", ".join(f"A{i}.data()" for i in range(len(k.args)))
    main.append(f"  blockDim = {{{bx}, {by}, {bz}}};")
    for name in k.kernels:  # one thread per CUDA thread of a block, kept for every block of the kernel
        main += [f"  {{ std::barrier<> bar({bx * by * bz}); g_bar = &bar;",
                 "    std::vector<std::thread> ts;",
                 (f"    for (unsigned tz = 0; tz < {bz}; ++tz) for (unsigned ty = 0; ty < {by}; ++ty)"
                  f" for (unsigned tx = 0; tx < {bx}; ++tx)"),
                 "      ts.emplace_back([&, tx, ty, tz] {",
                 "        threadIdx = {tx, ty, tz};",
                 (f"        for (unsigned z = 0; z < {gz}; ++z) for (unsigned y = 0; y < {gy}; ++y)"
                  f" for (unsigned x = 0; x < {gx}; ++x) {{"),
                 "          if (!tx && !ty && !tz) blockIdx = {x, y, z};",
                 "          g_bar->arrive_and_wait();  // blockIdx set, the previous block done with shared memory",
                 f"          {name}({call_args}); zq_check_idle_();",
                 "          g_bar->arrive_and_wait();  // every thread done with this block before the next",
                 "        }",
                 "      });",
                 "    for (auto& t : ts) t.join(); }"]
    for o in k.outputs:
        i = k.args.index(o)
        main.append(f'  {{ FILE* f = fopen(argv[1 + {i}], "wb"); fwrite(A{i}.data(), sizeof({T}), {npad}, f); '
                    "fclose(f); }")
    main += ["  return 0;", "}"]
    with tempfile.TemporaryDirectory(prefix="cuda-cpu-") as tmp:
        src = os.path.join(tmp, "k.cpp")
        exe = os.path.join(tmp, "k")
        eager = ["-DZQ_EAGER"] if async_copies == "eager" else []
        shim = _shim_dir(bool(eager))
        with open(src, "w") as f:
            f.write(('#include "shim.h"\n' if shim else SHIM) + k.source + "\n".join(main) + "\n")
        r = subprocess.run([*_GXX, *eager, *(["-I", shim] if shim else []), "-o", exe, src],
                           capture_output=True, text=True, check=False)
        if r.returncode:
            raise RuntimeError(f"g++ failed: {r.stderr[-2000:]}")
        paths = []
        coefs = np.asarray(st.coefs or [0.0], st.dtype)
        for a in k.args:
            p = os.path.join(tmp, f"{a}.bin")
            arr = coefs if a == "coefg" else (np.zeros(npad, st.dtype) if a in k.outputs else data[a])
            np.ascontiguousarray(arr, st.dtype).tofile(p)
            paths.append(p)
        r = subprocess.run([exe, *paths], capture_output=True, text=True, check=False)
        if r.returncode:
            raise RuntimeError(f"kernel run failed ({r.returncode}): {r.stderr[-500:]}")
        return {o: interior(st, np.fromfile(os.path.join(tmp, f"{o}.bin"), st.dtype).reshape(st.padded_shape))
                for o in k.outputs}


def emulate(st: Stencil, c: dict[str, Any], mode: str, edit: Any = None) -> dict[str, np.ndarray]:
    """Outputs of ``c`` on this emulator, the copies landing ``mode`` ("deferred": at the wait, the
    latest; "eager": at issue, the earliest); ``edit`` rewrites the source first (the broken kernels).
    The dynamic shared memory is made static as the launch would size it (``stencil_cases.static_dsmem``)."""
    import pytest

    from tests.apps.stencil_cases import static_dsmem

    if not gxx_available():
        pytest.skip("g++ not installed")

    def gen(s: Any, cc: Any) -> Any:
        k = static_dsmem(generate_cuda(s, cc))
        if edit is None:
            return k
        src = edit(k.source)
        assert src != k.source, "the edit changed nothing"
        return replace(k, source=src)

    return run_on_cpu(st, c, st.make_data(0), generate=gen, async_copies=mode)


def assert_matches(st: Stencil, out: dict[str, np.ndarray], what: Any) -> None:
    """Every output within 1e-10 (relative to its largest value) of the NumPy reference."""
    ref = st.reference(st.make_data(0))
    for o, r in ref.items():
        assert np.max(np.abs(out[o] - r)) <= 1e-10 * np.max(np.abs(r)), (what, o)
