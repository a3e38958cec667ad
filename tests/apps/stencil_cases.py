"""Configurations that exercise every optimisation of both generators on small grids (shared by tests)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from apps.stencil.cuda_gen import cuda_baseline
from apps.stencil.opencl_gen import opencl_baseline

CUDA_OPTS: dict[str, dict[str, Any]] = {
    "baseline": {},
    "block_merge": {"bx": 8, "by": 4, "bz": 1, "bmx": 2, "bmy": 2, "bmz": 2},
    "cyclic_merge": {"bx": 8, "by": 4, "bz": 1, "cmx": 2, "cmy": 2, "cmz": 2},
    "thread_block": {"bx": 16, "by": 2, "bz": 4},
    "constant_mem": {"coef": "constant"},
    "literal_coef": {"coef": "literal"},
    "stream": {"sd": "z", "sb": 4, "uf": 2},
    "stream_merge": {"sd": "z", "sb": 2, "uf": 4, "bx": 16, "by": 2, "bmx": 2, "cmy": 2},
    "prefetch": {"sd": "z", "sb": 4, "prefetch": True},
    "smem": {"sd": "z", "sb": 2, "uf": 2, "smem": True},
    "smem_prefetch": {"sd": "z", "sb": 2, "smem": True, "prefetch": True, "coef": "constant", "bx": 16, "by": 2,
                      "bmy": 2},
    "retime": {"sd": "z", "sb": 2, "retime": True, "bx": 16, "by": 2, "bmx": 2},
    "stcs": {"stcs": True, "bx": 16, "by": 2, "bz": 2, "cmy": 2},
    "stream_stcs": {"sd": "z", "sb": 4, "uf": 2, "prefetch": True, "stcs": True, "cmy": 2},
    "retime_stcs": {"sd": "z", "sb": 2, "retime": True, "stcs": True, "bx": 32, "by": 1, "cmy": 2},
    # issue 17: register-pressure control, kernel fission, kept common subexpressions
    "minb": {"minb": 8},
    "maxrreg": {"maxrreg": 64},
    "maxrreg_stream": {"sd": "z", "sb": 4, "prefetch": True, "maxrreg": 96},
    "cse": {"cse": True, "bx": 16, "bmx": 2},
    "cse_stream": {"sd": "z", "sb": 2, "uf": 2, "cse": True, "cmy": 2},
    "cse_smem": {"sd": "z", "sb": 2, "smem": True, "cse": True},
    "fission_2": {"fis": 2},
    "fission_3_stream": {"fis": 3, "sd": "z", "sb": 2, "cse": True, "maxrreg": 128},
    "fission_5_stream": {"fis": 5, "sd": "z", "sb": 4, "prefetch": True, "bx": 16, "bmx": 2},
    "fission_5_retime": {"fis": 5, "sd": "z", "sb": 2, "retime": True},
    "ring": {"sd": "z", "sb": 2, "smem": True, "ring": True, "bx": 32, "by": 1},
    "ring_merge": {"sd": "z", "sb": 2, "uf": 2, "smem": True, "ring": True, "bx": 16, "by": 2, "bmx": 2, "cmy": 2},
    "ring_fission": {"fis": 3, "sd": "z", "sb": 2, "smem": True, "ring": True, "bx": 32, "by": 2, "cse": True},
    # the rings in dynamic shared memory (dsmem), up to DSMEM_LIMIT: hypterm's rings exist only so
    "ring_dsmem": {"sd": "z", "sb": 2, "smem": True, "ring": True, "dsmem": True, "bx": 32, "by": 1},
    "ring_dsmem_wide": {"sd": "z", "sb": 2, "uf": 2, "smem": True, "ring": True, "dsmem": True, "bx": 32, "by": 4},
    "ring_dsmem_fission": {"fis": 3, "sd": "z", "sb": 2, "smem": True, "ring": True, "dsmem": True, "bx": 16,
                           "by": 4, "bmx": 2, "cse": True},
    # the column z-queues in dynamic shared memory (zq): circular buffers, one slot per plane, per thread
    "zq": {"sd": "z", "sb": 2, "uf": 2, "zq": True, "bx": 32, "by": 4},
    # cyclic merging in y at distance 2 (< 2 hy): two points share columns, so their queues merge
    "zq_merge": {"sd": "z", "sb": 2, "zq": True, "bx": 16, "by": 2, "bmx": 2, "cmy": 2, "coef": "constant",
                 "stcs": True},
    "zq_fission": {"fis": 3, "sd": "z", "sb": 2, "zq": True, "bx": 32, "by": 2, "cse": True, "maxrreg": 128},
    "zq_cyclic_unroll": {"sd": "z", "sb": 4, "uf": 4, "zq": True, "bx": 8, "by": 4, "cmx": 2, "coef": "literal",
                         "minb": 4},
}

#: the option sets with the rings in dynamic shared memory
DSMEM_OPTS = ("ring_dsmem", "ring_dsmem_wide", "ring_dsmem_fission")
#: the option sets with the z-queues in dynamic shared memory
ZQ_OPTS = ("zq", "zq_merge", "zq_fission", "zq_cyclic_unroll")

OPENCL_OPTS: dict[str, dict[str, Any]] = {
    "baseline": {},
    "work_group": {"wgx": 8, "wgy": 8, "wgz": 2},
    "block_merge": {"wgx": 8, "wgy": 4, "bmx": 4, "bmy": 2, "bmz": 2},
    "cyclic_merge": {"wgx": 8, "wgy": 4, "cmx": 2, "cmy": 2, "cmz": 2},
    "vector8": {"wgx": 4, "wgy": 8, "bmx": 8, "vx": 8},
    "vector16": {"wgx": 2, "wgy": 16, "bmx": 16, "vx": 16},
    "local": {"wgx": 8, "wgy": 4, "mem": "local", "bmx": 2, "cmy": 2},
    "local_vector": {"wgx": 8, "wgy": 4, "mem": "local", "bmx": 4, "vx": 4, "cmz": 2},
    "image": {"mem": "image"},
    "image_vector": {"wgx": 8, "wgy": 4, "mem": "image", "bmx": 4, "vx": 2, "cmz": 2},
}


def cuda_config(name: str) -> dict[str, Any]:
    return {**cuda_baseline(), **CUDA_OPTS[name]}


def cuda_case_applies(opt: str, st: Any) -> bool:
    """Whether option set ``opt`` exists for stencil ``st``: retiming needs single-plane terms,
    fission into k kernels needs at least k outputs, ring buffers must fit in 48 KiB of shared memory
    (static) or in DSMEM_LIMIT (``dsmem``: dynamic, with opt-in), and so must the z-queues (``zq``)."""
    from apps.stencil.cuda_gen import (
        DSMEM_LIMIT,
        SMEM_LIMIT,
        _ring_bytes,
        cuda_retimable,
        cuda_zq_doubles,
    )

    c = cuda_config(opt)
    if c["retime"] and not cuda_retimable(st):
        return False
    if c["zq"]:
        if c["fis"] > len(st.outputs):
            return False
        per = cuda_zq_doubles(st, c)
        return min(per) > 0 and max(per) * c["bx"] * c["by"] * st.itemsize <= DSMEM_LIMIT
    limit = DSMEM_LIMIT if c["dsmem"] else SMEM_LIMIT
    if c["ring"] and (c["fis"] > len(st.outputs) or _ring_bytes(st, c) > limit):
        return False
    return bool(c["fis"] <= len(st.outputs))


def opencl_config(name: str) -> dict[str, Any]:
    return {**opencl_baseline(), **OPENCL_OPTS[name]}


def static_dsmem(spec: Any) -> Any:
    """``spec`` with each kernel's dynamic shared array made a static one of the bytes the launch passes.

    Why: the CPU emulator (tests/apps/cuda_on_cpu.py) has no launch to pass
    ``shared=`` to; a static array of exactly ``spec.shared[i]`` bytes is what
    the kernel sees on the device, so the dsmem kernels run there unchanged otherwise.
    """
    from dataclasses import replace

    decl = "extern __shared__ __align__(16) unsigned char dsm[];"
    parts = spec.source.split(decl)
    if len(parts) == 1:
        return spec
    assert len(parts) == len(spec.shared) + 1, "one dynamic array per kernel"
    src = parts[0]
    for n, rest in zip(spec.shared, parts[1:]):
        src += f"alignas(16) __shared__ unsigned char dsm[{n}];" + rest
    return replace(spec, source=src)


def compile_case(name: str, opt: str, n: int = 32) -> Any:
    """nvcc build (sm_90) of option set ``opt`` for stencil ``name`` at ``n``^3: the compile-only tests' step."""
    from apps.stencil.cstuner import cstuner_stencil
    from apps.stencil.cuda_gen import generate_cuda
    from measurement.cuda import compile_cuda

    k = generate_cuda(cstuner_stencil(name, n), cuda_config(opt))
    return compile_cuda(k.source, arch="sm_90", options=k.options)


def assert_matches_reference(runner: Any, res: Any) -> None:
    """A GPU run of ``runner`` ended OK and its first output matches the NumPy reference (relative 1e-9).

    One definition for every transformation's GPU test, so that they all hold kernels to the same tolerance.
    """
    assert res.state == "OK", res.reason
    assert res.metrics["max_abs_error"] <= 1e-9 * max(1.0, runner.ref[runner.st.outputs[0][0]].max())


def gpu_runners_or_skip() -> dict[str, Any]:
    """One ``CudaStencilRunner`` per csTuner stencil at 32^3 on GPU 0, or a skip where no GPU is usable."""
    import pytest

    from apps.stencil.cstuner import CSTUNER_STENCILS, cstuner_stencil
    from apps.stencil.runner import CudaStencilRunner

    try:
        from measurement.cuda import CudaBackend

        backend = CudaBackend(0)
    except Exception as exc:  # noqa: BLE001 - no PyCUDA or no GPU: skip
        pytest.skip(f"no CUDA GPU usable here ({exc})")
    return {n: CudaStencilRunner(cstuner_stencil(n, 32), backend, repeats=1, warmup=0) for n in CSTUNER_STENCILS}


@functools.cache
def space_count(name: str, n: int, expr: str | None = None) -> int:
    """``cuda_space`` of csTuner stencil ``name`` at ``n``^3 counted exactly (``count_valid(10**9, merge=True)``:
    variable elimination, several times faster than the join and checked against it in
    tests/ensemble/test_space_count_merged.py), with ``expr`` required (None: the whole space).

    Cached for the session: the space-count tests of several files (zq, dsmem, stage, transforms) ask for
    some of the same counts (``not zq``, ``not zqs``, the whole space), each tens of seconds for hypterm.
    """
    from apps.stencil.cstuner import cstuner_stencil
    from apps.stencil.space import cuda_space

    s = cuda_space(cstuner_stencil(name, n))
    if expr is not None:
        s.require(expr, name="fixed")
    got = s.count_valid(10**9, merge=True)
    assert got is not None, (name, n, expr)
    return got


def count_space(st: Any, expr: str | None = None) -> int:
    """``space_count`` of stencil ``st``, a csTuner stencil on a cube (what the cache is keyed by)."""
    from apps.stencil.cstuner import cstuner_stencil

    assert st == cstuner_stencil(st.name, st.shape[0]), "the cache holds csTuner stencils on cubes only"
    return space_count(st.name, st.shape[0], expr)


class ParallelCases:
    """Runs the cases of parametrized tests ``os.cpu_count()`` at a time, once, and hands each test its own outcome.

    Why: a case of the CUDA tests is an nvcc or g++ compile (one core each) and, for the CPU emulator, a run;
    one test at a time they left a core idle (``test_stencil_cuda.py`` 192 s -> 95 s, ``_cpu.py`` 228 s ->
    161 s on 2 cores). The first test of a function to ask runs every case of that function that the session
    selected (so ``-k`` one case runs only that one); each test then raises what its own case raised
    (assertion, error or skip), and nothing else. Use through the module-scoped ``parallel_cases`` fixture.
    """

    def __init__(self, request: Any) -> None:
        self._request = request
        self._done: dict[tuple[str, tuple[tuple[str, Any], ...]], BaseException | None] = {}

    def run(self, test_name: str, check: Callable[..., None], **params: Any) -> None:
        """``check(**params)`` for this test's case, computed with the rest of ``test_name``'s selected cases."""
        key = (test_name, _frozen(params))
        if key not in self._done:
            group = [p for p in selected_params(self._request, test_name) if (test_name, _frozen(p)) not in self._done]
            if all(_frozen(p) != key[1] for p in group):
                group.append(params)

            def outcome(p: dict[str, Any]) -> BaseException | None:
                try:
                    check(**p)
                except BaseException as exc:  # noqa: BLE001 - assertion, skip or error: the case's own test raises it
                    return exc
                return None

            with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
                for p, out in zip(group, pool.map(outcome, group)):
                    self._done[(test_name, _frozen(p))] = out
        failure = self._done[key]
        if failure is not None:
            raise failure


def _frozen(params: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(params.items()))


def selected_params(request: Any, test_name: str) -> list[dict[str, Any]]:
    """The parameters of each item of ``test_name`` (a parametrized test function) that this pytest session runs.

    Why: a module fixture that does the work of all of a test's cases at once, in parallel (compiles, CPU
    runs), should do only the cases selected (``-k``, ``-m``, a node id), so that running one case stays
    as quick as it was.
    """
    return [dict(item.callspec.params) for item in request.session.items
            if getattr(item, "originalname", None) == test_name and hasattr(item, "callspec")]
