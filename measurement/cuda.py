"""PyCUDA backend: compile with nvcc, launch, time with CUDA events, verify.

Why this shape: a tuner must tell a configuration that cannot exist on the
device ("refused": too many registers or threads for the launch, shared
memory over the limit, out of memory) from one that compiles into a wrong
kernel (INVALID) or one that crashed (FAILED), so every outcome is a typed
``Result`` (Kernel Tuner's backend interface does the same with its
``InvalidConfig``/``CompilationFailedConfig``/``RuntimeFailedConfig``).
Compilation goes through ``nvcc -cubin`` in a subprocess with a time limit
(``measurement.process.run_command``), which needs no GPU, so compile-only
checks (ptxas registers and spills) run anywhere nvcc is installed.  PyCUDA
is imported only when a kernel is launched.

Timing: CUDA events around each launch after a warm-up; raw times are kept,
and an independent wall-clock timer around launch + synchronize is recorded
in ``metrics`` so the two can be compared. With ``CudaBackend(hold=True)`` the
launches are enqueued behind a hold (``measurement.cuda_hold``), so that the
events do not include the host's launch overhead.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ensemble.errors import EnsembleError, MissingExtraError
from ensemble.result import Result
from measurement.process import run_command
from measurement.timing import device_timing_result
from measurement.verify import Verdict

__all__ = ["NCU_METRICS", "CudaBackend", "CudaBuild", "CudaBuildError", "compile_cuda", "ncu_available",
           "ncu_profile", "nvcc_available", "parse_ncu_csv", "parse_ptxas"]

_REFUSED = ("too many resources", "out of memory", "invalid argument", "too many threads",
            "invalid value", "shared memory", "exceeds")


class CudaBuildError(EnsembleError):
    """nvcc rejected the source; ``log`` has the compiler output."""

    def __init__(self, message: str, log: str = "") -> None:
        super().__init__(message)
        self.log = log


@dataclass(frozen=True)
class CudaBuild:
    """A compiled cubin and what ptxas said about it."""

    cubin: bytes
    arch: str
    registers: int | None = None
    spill_stores: int = 0
    spill_loads: int = 0
    smem_bytes: int = 0
    log: str = ""
    compile_time: float = 0.0

    def metrics(self) -> dict[str, float]:
        m = {"spill_stores": float(self.spill_stores), "spill_loads": float(self.spill_loads),
             "smem_bytes": float(self.smem_bytes), "compile_time": self.compile_time}
        if self.registers is not None:
            m["registers"] = float(self.registers)
        return m


def nvcc_available(nvcc: str = "nvcc") -> bool:
    return shutil.which(nvcc) is not None


def parse_ptxas(log: str) -> dict[str, int]:
    """Registers, spills and shared memory from ``-Xptxas -v`` output."""
    # several kernels in one source (kernel fission): the largest registers and shared memory, the summed spills
    out = {"registers": -1, "spill_stores": 0, "spill_loads": 0, "smem_bytes": 0}
    for m in re.finditer(r"Used (\d+) registers", log):
        out["registers"] = max(out["registers"], int(m.group(1)))
    for m in re.finditer(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log):
        out["spill_stores"] += int(m.group(1))
        out["spill_loads"] += int(m.group(2))
    for m in re.finditer(r"(\d+) bytes smem", log):
        out["smem_bytes"] = max(out["smem_bytes"], int(m.group(1)))
    return out


def compile_cuda(source: str, *, defines: Mapping[str, Any] | None = None, arch: str = "sm_90",
                 options: Sequence[str] = (), nvcc: str = "nvcc", timeout: float | None = 300) -> CudaBuild:
    """Compile ``source`` to a cubin with the configuration as ``-D`` defines.

    Raises CudaBuildError (with the log) when nvcc fails or times out, and
    MissingExtraError when nvcc is not installed.
    """
    if not nvcc_available(nvcc):
        raise MissingExtraError(f"compile_cuda(nvcc={nvcc!r}): nvcc not found on PATH; install the CUDA toolkit")
    with tempfile.TemporaryDirectory(prefix="ens-cuda-") as tmp:
        src = os.path.join(tmp, "kernel.cu")
        out = os.path.join(tmp, "kernel.cubin")
        with open(src, "w") as f:
            f.write(source)
        argv = [nvcc, "-cubin", f"-arch={arch}", "-O3", "-Xptxas", "-v", "-o", out, src]
        for k, v in (defines or {}).items():
            argv.insert(1, f"-D{k}={int(v) if isinstance(v, bool) else v}")
        argv[1:1] = list(options)
        t0 = time.perf_counter()
        res = run_command(argv, timeout=timeout)
        dt = time.perf_counter() - t0
        log = (res.stdout or "") + (res.stderr or "")
        if res.state != "OK" or res.returncode != 0 or not os.path.exists(out):
            first = next((ln for ln in log.splitlines() if "error" in ln.lower()), log.strip()[-300:])
            what = "timed out" if res.state == "TIMEOUT" else "failed"
            raise CudaBuildError(f"nvcc {what}: {first}", log)
        with open(out, "rb") as f:
            cubin = f.read()
    p = parse_ptxas(log)
    return CudaBuild(cubin, arch, p["registers"] if p["registers"] >= 0 else None, p["spill_stores"],
                     p["spill_loads"], p["smem_bytes"], log, dt)


@dataclass
class _Launch:
    fn: Any
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: list[Any] = field(default_factory=list)


class CudaBackend:
    """One CUDA device (PyCUDA primary context) and the buffers living on it."""

    #: class defaults, so that a backend built without ``__init__`` (tests with a fake driver) times as before
    hold: bool = False
    _hold: Any = None

    def __init__(self, device: int | None = None, *, hold: bool = False) -> None:
        """``device``: a CUDA device index; None binds MPI ranks to devices (``ensemble.mpi.rank_device``).

        With None: ``ENSEMBLE_DEVICES`` when set, else under mpirun with several
        ranks on this host ``local_rank % device count``, else device 0.
        ``hold``: hold the queue while each timed launch (and the copy of
        ``copy_bandwidth``) is enqueued (``measurement.cuda_hold``), so that the
        events time the GPU's work without the host's launch overhead. Off by
        default: it changes every figure by that overhead, and is opt-in until it
        has been measured side by side on the GPUs of record. Use it with
        ``warmup >= 1`` in ``run``: the warm-up goes unheld, and a kernel's first
        launch held may wait for the hold's timeout (CUDA's lazy loading), which
        is then counted in ``metrics["hold_timeouts"]``.
        """
        try:
            import pycuda.driver as drv
        except ImportError as exc:  # pragma: no cover - depends on the machine
            raise MissingExtraError("CudaBackend needs PyCUDA: pip install ensemble-tuner[cuda]") from exc
        drv.init()
        if device is None:
            from ensemble.mpi import rank_device

            bound = rank_device(drv.Device.count())
            device = 0 if bound is None else bound
        self.index = device
        if not 0 <= device < drv.Device.count():
            raise EnsembleError(f"CudaBackend(device={device}): only {drv.Device.count()} CUDA devices present")
        self._drv = drv
        self.device = drv.Device(device)
        self.context = self.device.retain_primary_context()
        self.context.push()
        self._owner: int | None = threading.get_ident()
        atexit.register(self.close)
        self.name = self.device.name()
        cc = self.device.compute_capability()
        self.arch = f"sm_{cc[0]}{cc[1]}"
        self.hold = hold
        self._hold: Any = None

    def _stream_hold(self) -> Any:
        """The backend's ``StreamHold``, built (one small nvcc compile) on first use; None while ``hold`` is off."""
        if not self.hold:
            return None
        if self._hold is None:
            from measurement.cuda_hold import StreamHold

            try:
                self._hold = StreamHold(self)
            except (CudaBuildError, MissingExtraError, self._drv.Error) as exc:
                raise EnsembleError(f"CudaBackend(hold=True): cannot set up the launch hold on {self.name} ({exc}); "
                                    f"use hold=False") from exc
        return self._hold

    @contextlib.contextmanager
    def _timed_region(self, active: bool = True) -> Iterator[None]:
        """Enqueue the block's work behind the launch hold when ``hold`` is on (and ``active``); plain otherwise."""
        h = self._stream_hold() if active else None
        if h is None:
            yield
        else:
            with h.held():
                yield

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """Make the context current in the calling thread for the block.

        PyCUDA keeps a context stack per thread and aborts the process when a
        thread ends with a context still pushed, so a thread other than the
        creator pushes here and pops on the way out.
        """
        if threading.get_ident() == self._owner:
            yield
            return
        self.context.push()
        try:
            yield
        finally:
            self._drv.Context.pop()

    def close(self) -> None:
        """Pop the context pushed by the constructor (PyCUDA aborts at exit if it is left pushed)."""
        if self._owner is not None and threading.get_ident() == self._owner:
            self._owner = None
            with contextlib.suppress(self._drv.Error):
                self._drv.Context.pop()

    # ---- data ----------------------------------------------------------
    def upload(self, arrays: Mapping[str, np.ndarray]) -> dict[str, Any]:
        """Copy host arrays to new device allocations (name -> DeviceAllocation)."""
        return {k: self._drv.to_device(np.ascontiguousarray(v)) for k, v in arrays.items()}

    def empty(self, nbytes: int) -> Any:
        return self._drv.mem_alloc(max(1, int(nbytes)))

    def zero(self, buf: Any, nbytes: int) -> None:
        self._drv.memset_d8(buf, 0, int(nbytes))

    def download(self, buf: Any, out: np.ndarray) -> np.ndarray:
        self._drv.memcpy_dtoh(out, buf)
        return out

    #: element types ``gather`` can move, as CUDA C names
    _GATHER_TYPES: ClassVar[dict[str, str]] = {"float64": "double", "float32": "float"}

    def gather(self, buf: Any, index: Any, out: np.ndarray) -> np.ndarray:
        """``out[i] = buf[index[i]]`` on the device; only ``out`` crosses the bus.

        Why: a sampled verification needs 100,000 values of an output grid,
        and downloading the whole grid (1 GiB for 512^3 doubles) costs about
        0.25 s a trial on an H100, as much as the rest of a trial
        (docs/CSTUNER.md, session 15). ``index``: a device array of int64
        flat element indices into ``buf``, ``out.size`` of them (upload it
        once). The small kernel is compiled with nvcc on first use, once per
        element type. Raises ``ValueError`` for another element type.
        """
        t = self._GATHER_TYPES.get(out.dtype.name)
        if t is None:
            raise ValueError(f"gather(out): element type {out.dtype} not supported; use float32 or float64")
        kernels = self.__dict__.setdefault("_gather_kernels", {})
        if t not in kernels:
            src = (f'extern "C" __global__ void gather(const {t}* __restrict__ src, const long long* __restrict__ idx,'
                   f' {t}* __restrict__ dst, long long n) {{ long long i = (long long)blockIdx.x * blockDim.x + '
                   f'threadIdx.x; if (i < n) dst[i] = src[idx[i]]; }}')
            kernels[t] = self.load(compile_cuda(src, arch=self.arch), "gather")  # (module, function): keep both
        n = int(out.size)
        scratch = self.__dict__.setdefault("_gather_scratch", {})
        if scratch.get("nbytes", 0) < out.nbytes:
            scratch.update(nbytes=out.nbytes, buf=self._drv.mem_alloc(max(1, out.nbytes)))
        fn = kernels[t][1]
        fn(buf, index, scratch["buf"], np.int64(n), grid=((n + 255) // 256, 1, 1), block=(256, 1, 1))
        self._drv.memcpy_dtoh(out, scratch["buf"])
        return out

    def copy_bandwidth(self, nbytes: int = 1 << 30, repeats: int = 10) -> float:
        """Measured device-to-device copy bandwidth in bytes/s (bytes read plus written), median of repeats."""
        drv = self._drv
        a, b = drv.mem_alloc(nbytes), drv.mem_alloc(nbytes)
        drv.memset_d8(a, 1, nbytes)
        start, end = drv.Event(), drv.Event()
        times = []
        for i in range(repeats + 2):
            with self._timed_region():
                start.record()
                if self.hold:  # async: the host must not wait for a copy queued behind the hold
                    drv.memcpy_dtod_async(b, a, nbytes)
                else:
                    drv.memcpy_dtod(b, a, nbytes)
                end.record()
            end.synchronize()
            if self._hold is not None:
                self._hold.settle()
            if i >= 2:
                times.append(end.time_since(start) / 1e3)
        a.free()
        b.free()
        return 2 * nbytes / statistics.median(times)

    # ---- kernels ---------------------------------------------------------
    def load(self, build: CudaBuild, kernel_name: str) -> tuple[Any, Any]:
        mod = self._drv.module_from_buffer(build.cubin)
        return mod, mod.get_function(kernel_name)

    def run(self, build: CudaBuild, kernel_name: str | Sequence[str], *, grid: tuple[int, int, int],
            block: tuple[int, int, int],
            args: Sequence[Any], constants: Mapping[str, np.ndarray] | None = None,
            verify: Callable[[], Verdict] | None = None, before: Callable[[], None] | None = None,
            warmup: int = 1, repeats: int = 5, discard_first: int = 0, statistic: str = "median",
            shared: Sequence[int] | None = None) -> Result:
        """Launch, time and check one kernel; returns a typed ``Result``.

        ``kernel_name``: one kernel, or several (kernel fission) launched in
        order with the same arguments and geometry and timed together.
        ``shared``: bytes of dynamic shared memory per kernel (in the same
        order); a kernel asking for any opts in to that much first
        (``MAX_DYNAMIC_SHARED_SIZE_BYTES``: above 48 KiB a launch fails
        without it).
        ``args``: device allocations or NumPy scalars in kernel order.
        ``before``: called once before the first launch (e.g. zero the outputs).
        ``verify``: called after the timed runs; a failed verdict makes the
        result INVALID.  Time is in seconds (``statistic`` of the kept times).
        """
        drv = self._drv
        metrics = build.metrics()
        kernel_names = [kernel_name] if isinstance(kernel_name, str) else list(kernel_name)
        try:
            mod, _ = self.load(build, kernel_names[0])
            fns = [mod.get_function(k) for k in kernel_names]
        except drv.Error as exc:
            return Result(state="FAILED", reason=f"load: {exc}", metrics=metrics)
        smem = [int(n) for n in (shared or [0] * len(fns))]
        if len(smem) != len(fns):
            raise ValueError(f"shared: one byte count per kernel ({len(fns)}), got {len(smem)}")
        for fn, n in zip(fns, smem):
            if n:
                try:
                    fn.set_attribute(drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, n)
                except (AttributeError, drv.Error) as exc:  # an old PyCUDA or a refusing driver: FAILED, not a crash
                    return Result(state="FAILED", metrics=metrics,
                                  reason=f"load: cannot opt in to {n} bytes of dynamic shared memory: {exc}")
        threads = block[0] * block[1] * block[2]
        for fn in fns:
            max_threads = fn.get_attribute(drv.function_attribute.MAX_THREADS_PER_BLOCK)
            if threads > max_threads:
                return Result(state="FAILED", metrics=metrics,
                              reason=f"refused: {threads} threads per block > {max_threads} allowed for this kernel")
        for name, values in (constants or {}).items():
            ptr, size = mod.get_global(name)
            host = np.ascontiguousarray(values)
            if host.nbytes != size:
                return Result(state="FAILED", reason=f"constant {name} has {size} bytes, got {host.nbytes}")
            drv.memcpy_htod(ptr, host)
        if before is not None:
            before()
        start, end = drv.Event(), drv.Event()
        ctx = drv.Context
        hold = self._stream_hold()
        late = 0

        def once(warm: bool = False) -> tuple[float, float]:
            nonlocal late
            t0 = time.perf_counter()
            # the warm-up goes without the hold: a kernel's first launch may load its code (CUDA's lazy
            # loading), which can wait for the device to go idle, and so for the hold's timeout
            with self._timed_region(active=not warm):
                start.record()
                for fn, n in zip(fns, smem):
                    fn(*args, grid=grid, block=block, shared=n)
                end.record()
            end.synchronize()
            ctx.synchronize()
            wall = time.perf_counter() - t0
            if hold is not None and not warm:
                late += hold.settle()
            return end.time_since(start) / 1e3, wall

        try:
            for _ in range(warmup):
                once(warm=True)
            pairs = [once() for _ in range(repeats)][discard_first:]
        except drv.Error as exc:
            msg = str(exc)
            kind = "refused" if any(s in msg.lower() for s in _REFUSED) else "launch"
            return Result(state="FAILED", reason=f"{kind}: {msg}", metrics=metrics)
        if hold is not None:
            metrics["hold_timeouts"] = float(late)  # > 0: those launches were timed with the host's overhead
        return device_timing_result(pairs, statistic=statistic, metrics=metrics, verify=verify)


# -- Nsight Compute metrics (opt-in: ``--metrics ncu``) ----------------------------

#: The metric set csTuner collects per sample (Sun et al., CLUSTER 2021, Section IV-D names SM
#: utilisation and the L1/texture and L2 hit rates as examples of the Nsight metrics its
#: performance dataset holds; the rest cover the memory and compute efficiency the section
#: describes), as Nsight Compute metric names.
NCU_METRICS: tuple[str, ...] = (
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",            # SM utilisation
    "l1tex__t_sector_hit_rate.pct",                                # L1/texture hit rate
    "lts__t_sector_hit_rate.pct",                                  # L2 hit rate
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",          # DRAM throughput
    "dram__bytes.sum",                                             # DRAM traffic
    "sm__warps_active.avg.pct_of_peak_sustained_active",           # achieved occupancy
    "smsp__inst_executed.sum",                                     # instructions
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",              # shared-memory wavefronts
    "gpu__time_duration.sum",                                      # kernel duration
)


def ncu_available(ncu: str = "ncu") -> bool:
    """True when Nsight Compute's command line is on PATH."""
    return shutil.which(ncu) is not None


def parse_ncu_csv(text: str) -> dict[str, float]:
    """``{metric: value}`` from ``ncu --csv --metrics ...`` output (the last launch profiled wins).

    Values are numbers with thousands separators; units are dropped (the
    names say what they are); unparsable values are skipped.
    """
    import csv
    import io

    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    out: dict[str, float] = {}
    if not lines:
        return out
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        name, value = row.get("Metric Name"), row.get("Metric Value")
        if not name or value is None:
            continue
        try:
            out[name] = float(value.replace(",", ""))
        except ValueError:
            continue
    return out


def ncu_profile(argv: Sequence[str], *, metrics: Sequence[str] = NCU_METRICS, kernel: str = "regex:stencil",
                launch_skip: int = 1, timeout: float = 120.0, ncu: str = "ncu") -> dict[str, float]:
    """Run ``argv`` under Nsight Compute and return the metrics of one launch of ``kernel``.

    One program per profile: ncu replays the kernel once per metric pass, so
    it must own the process that launches it (the tuner's own process keeps
    its CUDA context).  Raises CudaBuildError with ncu's output when it fails
    or reports nothing, so the caller can store the trial without metrics.
    """
    if not ncu_available(ncu):
        raise MissingExtraError(f"--metrics ncu needs Nsight Compute's {ncu!r} on PATH (CUDA toolkit); "
                                "drop --metrics or install Nsight Compute")
    cmd = [ncu, "--csv", "--metrics", ",".join(metrics), "--kernel-name", kernel,
           "--launch-skip", str(launch_skip), "--launch-count", "1", *argv]
    res = run_command(cmd, timeout=timeout)
    values = parse_ncu_csv(res.stdout or "")
    if not values:
        raise CudaBuildError(f"ncu reported no metrics (state {res.state}); command: {' '.join(cmd[:8])} ...",
                             (res.stdout or "")[-2000:] + (res.stderr or "")[-2000:])
    return values
