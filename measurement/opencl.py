"""PyOpenCL backend: pick a device, build with -D defines, time with events, verify.

Why typed refusals: Cummins et al. ("Autotuning OpenCL workgroup size for
stencil patterns", ADAPT 2016) observed that many work-group sizes are
*refused* by a device for a given kernel (CL_INVALID_WORK_GROUP_SIZE,
CL_OUT_OF_RESOURCES) and that a tuner must learn this rather than crash.
Every such case here becomes ``Result(state="FAILED", reason="refused: ...")``;
build errors are ``FAILED`` with ``build:``; wrong output is ``INVALID``.

Timing uses OpenCL profiling events (``CL_QUEUE_PROFILING_ENABLE``): after
``warmup`` untimed launches, ``repeats`` timed ones; ``discard_first=1`` with
``repeats=4`` is the papers' "run 4 times, average the last 3".  The wall
clock around launch + ``finish()`` is kept in ``metrics`` as an independent
check on the event timer.  PyOpenCL is imported when a backend is created.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ensemble.errors import ConfigurationError, EnsembleError, MissingExtraError
from ensemble.result import Result
from measurement.timing import device_timing_result
from measurement.verify import Verdict

_log = logging.getLogger("ensemble.measurement.opencl")

__all__ = ["Image3D", "OpenCLBackend", "OpenCLBuildError", "list_devices", "opencl_available"]

_REFUSED_CODES = ("INVALID_WORK_GROUP_SIZE", "INVALID_WORK_ITEM_SIZE", "OUT_OF_RESOURCES",
                  "MEM_OBJECT_ALLOCATION_FAILURE", "OUT_OF_HOST_MEMORY", "INVALID_GLOBAL_WORK_SIZE",
                  "IMAGE_FORMAT_NOT_SUPPORTED", "INVALID_IMAGE_SIZE")


class OpenCLBuildError(EnsembleError):
    """The OpenCL compiler rejected a program; ``log`` has its output."""

    def __init__(self, message: str, log: str = "") -> None:
        super().__init__(message)
        self.log = log


@dataclass(frozen=True)
class Image3D:
    """Marks a host array to be uploaded as a read-only single-channel 3-D image."""

    array: np.ndarray


def _cl() -> Any:
    try:
        import pyopencl as cl
    except ImportError as exc:  # pragma: no cover - depends on the machine
        raise MissingExtraError("the OpenCL backend needs PyOpenCL: pip install ensemble-tuner[opencl]") from exc
    return cl


def list_devices() -> list[tuple[int, str, int, str]]:
    """(platform index, platform name, device index, device name) of every OpenCL device."""
    cl = _cl()
    out = []
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        return []
    for pi, p in enumerate(platforms):
        try:
            devs = p.get_devices()
        except cl.Error:
            continue
        for di, d in enumerate(devs):
            out.append((pi, p.name, di, d.name))
    return out


def opencl_available() -> bool:
    try:
        return bool(list_devices())
    except MissingExtraError:
        return False


def _pick(items: Sequence[Any], want: int | str | None, what: str) -> Any:
    if want is None:
        return items[0]
    if isinstance(want, int) or (isinstance(want, str) and want.isdigit()):
        i = int(want)
        if not 0 <= i < len(items):
            raise ConfigurationError(f"{what}={want}: only {len(items)} available ({[x.name for x in items]})")
        return items[i]
    for x in items:
        if want.lower() in x.name.lower():
            return x
    raise ConfigurationError(f"{what}={want!r} matches none of {[x.name for x in items]}; pass a name part or index")



_PROBE = "__kernel void ensemble_probe(__global float *a) { a[get_global_id(0)] = 1.0f; }"


def _rank_order(devices: Sequence[Any]) -> list[Any]:
    """``devices`` with this MPI rank's device first (``ensemble.mpi.rank_device``), else unchanged."""
    from ensemble.mpi import rank_device

    i = rank_device(len(devices))
    if i is None or not devices:
        return list(devices)
    if not 0 <= i < len(devices):
        raise ConfigurationError(
            f"ENSEMBLE_DEVICES selects OpenCL device {i}, but the platform has only {len(devices)} "
            f"({[d.name for d in devices]}); give indices below {len(devices)}"
        )
    return [devices[i], *devices[:i], *devices[i + 1:]]


def _first_usable(cl: Any, platforms: Sequence[Any]) -> tuple[Any, Any]:
    """The first (platform, device) that can actually build a kernel.

    Why: an installed platform can list devices and still fail every build.
    PoCL 3.0 from PyPI (pocl-binary-distribution, LLVM 14) answers "unknown
    target CPU 'generic'" on CPUs newer than its LLVM (AMD family 1Ah, for
    one), while Debian's pocl-opencl-icd (LLVM 15) works on the same machine.
    Without an explicit --platform we skip such platforms instead of turning
    every trial into a FAILED build.
    """
    problems: list[str] = []
    for plat in platforms:
        try:
            devices = plat.get_devices()
        except cl.Error as exc:
            problems.append(f"{plat.name}: {exc}")
            continue
        for dev in _rank_order(devices):
            try:
                ctx = cl.Context([dev])
                cl.Program(ctx, _PROBE).build()
            except cl.Error as exc:
                first = [ln for ln in str(exc).splitlines() if "error" in ln.lower()]
                problems.append(f"{plat.name} / {dev.name}: {(first or [str(exc)])[-1][:160]}")
                continue
            if problems:
                _log.warning("OpenCL: skipped platforms that cannot build kernels here: %s", "; ".join(problems))
            return plat, dev
    raise EnsembleError(
        "OpenCLBackend: no OpenCL device here can build a kernel ("
        + "; ".join(problems)
        + "). PoCL from PyPI (LLVM 14) does not know some newer CPUs: install Debian's "
        "`apt-get install pocl-opencl-icd`, or pass --platform/--device for a GPU ICD."
    )

class OpenCLBackend:
    """One OpenCL device with a profiling queue."""

    def __init__(self, platform: int | str | None = None, device: int | str | None = None) -> None:
        """``platform``/``device``: a name part or an index.

        Without ``device``, MPI ranks are bound to the platform's devices
        (``ensemble.mpi.rank_device``: ``ENSEMBLE_DEVICES`` when set, else
        ``local_rank % devices`` when several ranks share this host); without
        either, the first platform that can build a kernel is used, starting
        with the rank's device.
        """
        cl = _cl()
        self._cl = cl
        platforms = cl.get_platforms()
        if not platforms:
            raise EnsembleError("OpenCLBackend: no OpenCL platform; install pocl-binary-distribution or a GPU ICD")
        if platform is None and device is None:
            plat, self.device = _first_usable(cl, platforms)
        else:
            plat = _pick(platforms, platform, "platform")
            devices = plat.get_devices()
            # no --device: under mpirun each rank takes its own device of the platform
            self.device = _pick(devices, device, "device") if device is not None else _rank_order(devices)[0]
        self.platform_name = plat.name
        self.name = self.device.name
        self.context = cl.Context([self.device])
        self.queue = cl.CommandQueue(self.context, properties=cl.command_queue_properties.PROFILING_ENABLE)
        self.max_work_group_size = int(self.device.max_work_group_size)
        self.max_work_item_sizes = [int(x) for x in self.device.max_work_item_sizes]
        self.local_mem_size = int(self.device.local_mem_size)
        self.image_support = bool(self.device.image_support)

    # ---- data ------------------------------------------------------------
    def upload(self, arrays: Mapping[str, np.ndarray | Image3D]) -> dict[str, Any]:
        """Device copies of host arrays: buffers, or images for ``Image3D`` values."""
        cl = self._cl
        mf = cl.mem_flags
        out: dict[str, Any] = {}
        for k, v in arrays.items():
            if isinstance(v, Image3D):
                a = np.ascontiguousarray(v.array)
                if a.dtype != np.float32 or a.ndim != 3:
                    raise ConfigurationError(f"upload({k}=Image3D): needs a 3-D float32 array, got {a.dtype} {a.shape}")
                fmt = cl.ImageFormat(cl.channel_order.R, cl.channel_type.FLOAT)
                make = getattr(cl, "create_image", None) or cl.Image
                out[k] = make(self.context, mf.READ_ONLY | mf.COPY_HOST_PTR, fmt,
                              shape=(a.shape[2], a.shape[1], a.shape[0]), hostbuf=a)
            else:
                out[k] = cl.Buffer(self.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.ascontiguousarray(v))
        return out

    def empty(self, nbytes: int) -> Any:
        return self._cl.Buffer(self.context, self._cl.mem_flags.READ_WRITE, max(1, int(nbytes)))

    def zero(self, buf: Any, nbytes: int) -> None:
        self._cl.enqueue_fill_buffer(self.queue, buf, np.zeros(1, np.uint8), 0, int(nbytes)).wait()

    def download(self, buf: Any, out: np.ndarray) -> np.ndarray:
        self._cl.enqueue_copy(self.queue, out, buf).wait()
        return out

    # ---- kernels -----------------------------------------------------------
    def build(self, source: str, *, defines: Mapping[str, Any] | None = None,
              options: Sequence[str] = ()) -> Any:
        """Compiled program; raises OpenCLBuildError with the build log."""
        cl = self._cl
        opts = [f"-D{k}={int(v) if isinstance(v, bool) else v}" for k, v in (defines or {}).items()] + list(options)
        try:
            return cl.Program(self.context, source).build(options=opts)
        except cl.Error as exc:
            log = str(exc)
            first = next((ln for ln in log.splitlines() if "error" in ln.lower()), log[:300])
            raise OpenCLBuildError(f"OpenCL build failed: {first.strip()}", log) from exc

    def run(self, program: Any, kernel_name: str, *, global_size: Sequence[int], local_size: Sequence[int] | None,
            args: Sequence[Any], verify: Callable[[], Verdict] | None = None,
            before: Callable[[], None] | None = None, warmup: int = 1, repeats: int = 5, discard_first: int = 0,
            statistic: str = "median") -> Result:
        """Launch, time and check one kernel; returns a typed ``Result`` (time in seconds)."""
        cl = self._cl
        kernel = cl.Kernel(program, kernel_name)  # one explicit kernel object per run (attribute access warns)
        metrics: dict[str, float] = {}
        if local_size is not None:
            wg = int(np.prod(local_size))
            kmax = int(kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, self.device))
            metrics["kernel_max_work_group"] = float(kmax)
            if wg > kmax:
                return Result(state="FAILED", metrics=metrics,
                              reason=f"refused: work-group {tuple(local_size)} = {wg} > {kmax} for this kernel")
            for d, (l, m) in enumerate(zip(local_size, self.max_work_item_sizes)):
                if l > m:
                    return Result(state="FAILED", metrics=metrics,
                                  reason=f"refused: local size {l} > {m} in dimension {d}")
            lmem = int(kernel.get_work_group_info(cl.kernel_work_group_info.LOCAL_MEM_SIZE, self.device))
            if lmem > self.local_mem_size:
                return Result(state="FAILED", metrics=metrics,
                              reason=f"refused: {lmem} bytes of local memory > {self.local_mem_size}")
        try:
            kernel.set_args(*args)
        except cl.Error as exc:
            return Result(state="FAILED", reason=f"arguments: {exc}", metrics=metrics)
        if before is not None:
            before()

        def once() -> tuple[float, float]:
            t0 = time.perf_counter()
            ev = cl.enqueue_nd_range_kernel(self.queue, kernel, tuple(global_size),
                                            None if local_size is None else tuple(local_size))
            ev.wait()
            self.queue.finish()
            wall = time.perf_counter() - t0
            return (ev.profile.end - ev.profile.start) * 1e-9, wall

        try:
            for _ in range(warmup):
                once()
            pairs = [once() for _ in range(repeats)][discard_first:]
        except cl.Error as exc:
            msg = str(exc)
            kind = "refused" if any(c in msg for c in _REFUSED_CODES) else "launch"
            return Result(state="FAILED", reason=f"{kind}: {msg.strip()[:300]}", metrics=metrics)
        return device_timing_result(pairs, statistic=statistic, metrics=metrics, verify=verify)
