"""``dsmem``: the shared-memory ring buffers in dynamic shared memory, past 48 KiB (issue 17, Nsight Compute).

Here, without a GPU: the rules and the space counts (``dsmem`` adds
configurations only where there is a ring, and none where it is off),
the sources of existing configurations unchanged, the kernels compiled with
nvcc and run on the CPU emulator against NumPy, and the runner's launch path
(opt-in attribute, bytes passed, refusal) through ``CudaBackend.run`` with a
stand-in driver.  On a GPU (marker ``cuda``): every dsmem option set matches
NumPy on 32^3 for all eight stencils, the same cases as
``test_stencil_cuda.py``'s parametrised test.
"""

from __future__ import annotations

import functools
import hashlib
import re
import sys
import threading
import types
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

from apps.stencil.cstuner import CSTUNER_STENCILS, cstuner_stencil
from apps.stencil.cuda_gen import (
    DSMEM_LIMIT,
    SMEM_LIMIT,
    _ring_bytes,
    cuda_baseline,
    cuda_why_illegal,
    generate_cuda,
)
from apps.stencil.space import cuda_space
from measurement.cuda import nvcc_available
from tests.apps.cuda_on_cpu import check_case
from tests.apps.stencil_cases import (
    DSMEM_OPTS,
    ParallelCases,
    assert_matches_reference,
    compile_case,
    count_space,
    cuda_case_applies,
    cuda_config,
    gpu_runners_or_skip,
)

needs_nvcc = pytest.mark.skipif(not nvcc_available(), reason="nvcc not installed")
RING = {"sd": "z", "sb": 2, "smem": True, "ring": True}


def _cases() -> list[tuple[str, str]]:
    return [(n, o) for n in CSTUNER_STENCILS for o in DSMEM_OPTS if cuda_case_applies(o, cstuner_stencil(n, 32))]


# ---- rules and space ---------------------------------------------------------------------------------------
def test_dsmem_needs_a_ring_and_lifts_the_ring_limit_to_the_opt_in_maximum() -> None:
    st = cstuner_stencil("hypterm", 32)
    b = cuda_baseline()
    for c in ({**b, "dsmem": True}, {**b, "sd": "z", "sb": 2, "smem": True, "dsmem": True}):
        assert "needs ring" in str(cuda_why_illegal(st, c))
        assert not cuda_space(st).is_valid(c)
    ring = {**b, **RING, "bx": 32, "by": 1}
    assert _ring_bytes(st, ring) == 135_360 > SMEM_LIMIT
    assert "> 49152" in str(cuda_why_illegal(st, ring)) and not cuda_space(st).is_valid(ring)
    assert cuda_why_illegal(st, {**ring, "dsmem": True}) is None and cuda_space(st).is_valid({**ring, "dsmem": True})
    wide = {**ring, "dsmem": True, "by": 8}  # (32 + 8) x (8 + 8) points x 376 B = 240,640 B
    assert _ring_bytes(st, wide) > DSMEM_LIMIT and f"> {DSMEM_LIMIT}" in str(cuda_why_illegal(st, wide))
    assert not cuda_space(st).is_valid(wide)
    assert DSMEM_LIMIT == 232_448


def test_a_configuration_without_the_dsmem_key_is_the_same_as_dsmem_off() -> None:
    st = cstuner_stencil("j3d7pt", 32)
    c = cuda_config("ring")
    old = {k: v for k, v in c.items() if k != "dsmem"}
    assert cuda_why_illegal(st, old) is None
    assert generate_cuda(st, old) == generate_cuda(st, c)
    assert "dsmem" not in generate_cuda(st, c).source and "'dsmem': True" in generate_cuda(st, cuda_config(
        "ring_dsmem")).source


#: sha256[:16] of sources generated before ``dsmem`` existed (commit 4abf4e4), configurations without the key
BEFORE = {("j3d7pt", "baseline"): "45790d5927c6f944", ("j3d7pt", "ring"): "c605d4e03cc4f0c3",
          ("helmholtz", "smem_prefetch"): "1c4c0f6b837bb07c", ("hypterm", "fission_5_retime"): "0ca75dc18e0f2b17",
          ("addsgd4", "ring_fission"): "444c44b8cd8837a8", ("rhs4center", "ring"): "607d4af6f9d54d6c",
          ("hypterm", "stream_merge"): "80941ecfd0ee5568", ("addsgd6", "ring_fission"): "f773c542f252435e",
          ("addsgd6", "cse_stream"): "565758cf17218d3b", ("cheby", "maxrreg_stream"): "4c1ec399f18ad960"}


@pytest.mark.parametrize("with_key", [False, True])
def test_existing_configurations_generate_byte_identical_sources(with_key: bool) -> None:
    for (name, opt), digest in BEFORE.items():
        c = cuda_config(opt)
        if not with_key:
            del c["dsmem"]
        k = generate_cuda(cstuner_stencil(name, 32), c)
        assert hashlib.sha256(k.source.encode()).hexdigest()[:16] == digest, (name, opt)
        assert k.shared == () and k.dynamic_smem == 0


#: cuda_space(st).count_valid() at 64^3 before ``dsmem`` existed (commit 4abf4e4)
COUNTS_BEFORE = {"j3d7pt": 12_108_588, "hypterm": 42_500_652, "rhs4center": 25_985_148}


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] if n != "j3d7pt" else [])
                                  for n in COUNTS_BEFORE])
def test_space_counts_are_unchanged_without_dsmem_and_grow_only_by_rings(name: str) -> None:
    st = cstuner_stencil(name, 64)

    count = functools.partial(count_space, st)  # cached: the zq tests count "not zq" too

    assert count("not dsmem and not zq") == COUNTS_BEFORE[name]  # zq (later): test_stencil_cuda_zq.py
    assert count("dsmem and not ring") == 0
    with_dsmem = count("dsmem")
    assert with_dsmem > 0 and count("not zq") == COUNTS_BEFORE[name] + with_dsmem
    if name == "hypterm":  # no whole-stencil ring fits 48 KiB statically; with dsmem, some do
        assert count("ring and not dsmem and fis == 1") == 0
        assert count("ring and dsmem and fis == 1") > 0


def test_hypterm_has_dsmem_ring_configurations_that_the_space_samples() -> None:
    st = cstuner_stencil("hypterm", 320)
    s = cuda_space(st)
    s.require("ring and fis == 1", name="whole-stencil rings only")
    got = s.sample(np.random.default_rng(5), 40)
    assert got and all(c["dsmem"] and cuda_why_illegal(st, c) is None for c in got)
    assert all(0 < generate_cuda(st, c).dynamic_smem <= DSMEM_LIMIT for c in got[:5])


def test_dynamic_layout_is_aligned_and_sized_per_kernel() -> None:
    st = cstuner_stencil("hypterm", 32)
    k = generate_cuda(st, cuda_config("ring_dsmem_fission"))
    assert len(k.shared) == len(k.kernels) == 3 and len(set(k.shared)) == 3
    for body, n in zip(k.source.split('extern "C"')[1:], k.shared):
        assert body.count("extern __shared__ __align__(16) unsigned char dsm[];") == 1
        assert "__shared__ double" not in body
        offs = [int(x) for x in re.findall(r"reinterpret_cast<double \*>\(dsm \+ (\d+)\)", body)]
        assert offs and offs[0] == 0 and all(o % 16 == 0 for o in offs) and max(offs) < n
    assert k.dynamic_smem == max(k.shared) <= DSMEM_LIMIT


# ---- compile (nvcc) and run on the CPU emulator --------------------------------------------------------
_compile = compile_case


@needs_nvcc
def test_dsmem_rings_compile_for_hypterm_and_j3d7pt() -> None:
    cases = [("hypterm", "ring_dsmem"), ("j3d7pt", "ring_dsmem_wide")]
    with ThreadPoolExecutor(2) as pool:
        builds = list(pool.map(lambda c: _compile(*c), cases))
    for bd in builds:
        assert bd.cubin[:4] == b"\x7fELF" and bd.smem_bytes == 0  # no static shared memory left


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("name", CSTUNER_STENCILS)
def test_dsmem_rings_compile_for_every_stencil(name: str) -> None:
    opts = [o for o in DSMEM_OPTS if cuda_case_applies(o, cstuner_stencil(name, 32))]
    assert opts  # every stencil has a ring (each reads some array at in-plane neighbours)
    with ThreadPoolExecutor(3) as pool:
        builds = list(pool.map(lambda o: _compile(name, o), opts))
    assert all(bd.cubin[:4] == b"\x7fELF" and bd.smem_bytes == 0 for bd in builds)


def _cpu_check(name: str, opt: str) -> None:
    check_case(name, opt)


@pytest.mark.parametrize("name,opt", [("j3d7pt", "ring_dsmem_wide"), ("addsgd4", "ring_dsmem_fission")])
def test_dsmem_rings_match_numpy_on_the_cpu(name: str, opt: str) -> None:
    _cpu_check(name, opt)


@pytest.mark.slow
@pytest.mark.parametrize("name,opt", _cases())
def test_every_dsmem_ring_matches_numpy_on_the_cpu(name: str, opt: str, parallel_cases: ParallelCases) -> None:
    parallel_cases.run("test_every_dsmem_ring_matches_numpy_on_the_cpu", _cpu_check, name=name, opt=opt)


# ---- the runner's launch path, through CudaBackend.run with a stand-in driver ---------------------------
class _Fn:
    def __init__(self, drv: Any, name: str) -> None:
        self.drv, self.name = drv, name

    def get_attribute(self, attr: str) -> int:
        return 1024

    def set_attribute(self, attr: str, value: int) -> None:
        self.drv.attributes.append((self.name, attr, value))

    def __call__(self, *args: Any, **kw: Any) -> None:
        self.drv.launches.append((self.name, kw.get("shared")))


class _Driver(types.ModuleType):
    """The part of ``pycuda.driver`` that ``CudaBackend`` and the runner use, recording launches."""

    class Error(Exception):
        pass

    function_attribute = types.SimpleNamespace(MAX_THREADS_PER_BLOCK="MAX_THREADS_PER_BLOCK",
                                               MAX_DYNAMIC_SHARED_SIZE_BYTES="MAX_DYNAMIC_SHARED_SIZE_BYTES")
    device_attribute = types.SimpleNamespace(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN="OPTIN")

    class Event:
        def record(self) -> None: ...
        def synchronize(self) -> None: ...
        def time_since(self, other: Any) -> float:
            return 1.0

    class Context:
        @staticmethod
        def synchronize() -> None: ...

    def __init__(self) -> None:
        super().__init__("pycuda.driver")
        self.launches: list[tuple[str, Any]] = []
        self.attributes: list[tuple[str, str, int]] = []

    def module_from_buffer(self, cubin: bytes) -> Any:
        return types.SimpleNamespace(get_function=lambda n: _Fn(self, n), get_global=lambda n: (0, 0))

    def to_device(self, a: Any) -> Any:
        return object()

    def mem_alloc(self, n: int) -> Any:
        return object()

    def memset_d8(self, *a: Any) -> None: ...
    def memcpy_dtoh(self, *a: Any) -> None: ...
    def memcpy_htod(self, *a: Any) -> None: ...


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> Any:
    from measurement.cuda import CudaBackend

    drv = _Driver()
    pkg = types.ModuleType("pycuda")
    pkg.driver = drv  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pycuda", pkg)
    monkeypatch.setitem(sys.modules, "pycuda.driver", drv)
    be = CudaBackend.__new__(CudaBackend)  # the real run(), without a device
    be._drv, be._owner, be.arch = drv, threading.get_ident(), "sm_90"
    be.device = types.SimpleNamespace(get_attribute=lambda a: 232_448 if a == "OPTIN" else 0)
    return be, drv


def test_runner_opts_in_and_passes_each_kernels_dynamic_shared_memory(fake_gpu: Any) -> None:
    from apps.stencil.runner import CudaStencilRunner
    from measurement.cuda import CudaBuild

    be, drv = fake_gpu
    st = cstuner_stencil("hypterm", 32)
    runner = CudaStencilRunner(st, be, repeats=2, warmup=1)
    assert runner.smem_optin == 232_448
    k = generate_cuda(st, cuda_config("ring_dsmem_fission"))
    res = runner.measure((k, CudaBuild(b"\x7fELF", "sm_90")))
    sizes = dict(zip(k.kernels, k.shared))
    assert set(drv.attributes) == {(n, "MAX_DYNAMIC_SHARED_SIZE_BYTES", b) for n, b in sizes.items()}
    assert drv.launches == [(n, sizes[n]) for n in k.kernels] * 3  # warm-up + 2 repeats, each kernel in order
    assert res.metrics["dynamic_smem_bytes"] == max(k.shared)
    drv.launches.clear()
    drv.attributes.clear()
    k = generate_cuda(st, cuda_config("fission_2"))  # no dsmem: launched as before, no opt-in
    res = runner.measure((k, CudaBuild(b"\x7fELF", "sm_90")))
    assert drv.attributes == [] and {s for _, s in drv.launches} == {0} and "dynamic_smem_bytes" not in res.metrics


def test_a_pycuda_that_cannot_opt_in_gives_a_failed_result(fake_gpu: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from apps.stencil.runner import CudaStencilRunner
    from measurement.cuda import CudaBuild

    be, drv = fake_gpu
    monkeypatch.delattr(_Fn, "set_attribute")
    st = cstuner_stencil("j3d7pt", 32)
    runner = CudaStencilRunner(st, be, repeats=1, warmup=0)
    res = runner.measure((generate_cuda(st, cuda_config("ring_dsmem")), CudaBuild(b"\x7fELF", "sm_90")))
    assert res.state == "FAILED" and "cannot opt in to 2448 bytes" in str(res.reason) and drv.launches == []


def test_runner_refuses_more_dynamic_shared_memory_than_the_device_allows(fake_gpu: Any) -> None:
    from apps.stencil.runner import CudaStencilRunner

    be, drv = fake_gpu
    be.device = types.SimpleNamespace(get_attribute=lambda a: 101_376)  # sm_86's opt-in maximum (99 KiB)
    runner = CudaStencilRunner(cstuner_stencil("hypterm", 32), be, repeats=1, warmup=0)
    res = runner.build(cuda_config("ring_dsmem"))  # 135,360 B: refused before nvcc runs
    assert res.state == "FAILED" and res.reason.startswith("refused:") and "135360" in res.reason
    assert "101376" in res.reason and drv.launches == []


# ---- on the GPU ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def gpu_runners():  # type: ignore[no-untyped-def]
    return gpu_runners_or_skip()


@pytest.mark.cuda
@pytest.mark.parametrize("name,opt", _cases())
def test_dsmem_rings_match_numpy_on_the_gpu(name: str, opt: str, gpu_runners) -> None:  # type: ignore[no-untyped-def]
    runner = gpu_runners[name]
    res = runner(cuda_config(opt))
    assert_matches_reference(runner, res)
    assert res.metrics["dynamic_smem_bytes"] > 0


@pytest.mark.cuda
def test_device_reports_an_opt_in_limit_the_space_respects(gpu_runners) -> None:  # type: ignore[no-untyped-def]
    runner = gpu_runners["hypterm"]
    assert runner.smem_optin is not None and runner.smem_optin >= SMEM_LIMIT
    if runner.smem_optin < DSMEM_LIMIT:  # an sm_80/sm_86 card: the widest hypterm ring is refused, not failed
        from ensemble.result import Result

        res = runner.build(cuda_config("ring_dsmem_wide"))
        assert isinstance(res, Result) and res.reason is not None and res.reason.startswith("refused:")
