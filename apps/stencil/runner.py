"""Turn (stencil, configuration) into a measured, verified ``Result``.

Why a runner object: the input data, device buffers and the NumPy reference
are made once per stencil and reused by every configuration, so a trial
costs a build and a few launches, not a data upload; outputs are zeroed
before each configuration so a kernel that writes nothing cannot pass on a
previous kernel's output.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import numpy as np

from apps.stencil.cuda_gen import generate_cuda
from apps.stencil.opencl_gen import generate_opencl
from apps.stencil.spec import Stencil
from ensemble.result import Result
from measurement.verify import Verdict, compare

__all__ = ["CudaStencilRunner", "OpenCLStencilRunner", "interior"]

_log = logging.getLogger("ensemble.stencil")


def interior(st: Stencil, padded: np.ndarray) -> np.ndarray:
    oz, oy, ox = st.origin
    nz, ny, nx = st.shape
    return padded[oz:oz + nz, oy:oy + ny, ox:ox + nx]


class _Base:
    def __init__(self, st: Stencil, *, seed: int = 0, sample: int | None = None, rtol: float | None = None,
                 warmup: int = 1, repeats: int = 5, discard_first: int = 0, statistic: str = "median") -> None:
        self.st = st
        self.data = st.make_data(seed)
        self.points: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        if sample is not None and sample < int(np.prod(st.shape)):
            rng = np.random.default_rng(seed + 1)
            self.points = tuple(rng.integers(0, n, sample) for n in st.shape)  # type: ignore[assignment]
            self.ref = st.reference_at(self.data, self.points)  # type: ignore[arg-type]
        else:
            self.ref = st.reference(self.data)
        self.sample = sample
        self.rtol = rtol
        self.timing = {"warmup": warmup, "repeats": repeats, "discard_first": discard_first, "statistic": statistic}
        self.host_out = {o: np.empty(st.padded_shape, st.dtype) for o, _ in st.outputs}
        self.nbytes = int(np.prod(st.padded_shape)) * st.itemsize

    def _verify(self, backend: Any, bufs: Mapping[str, Any]) -> Verdict:
        worst: Verdict | None = None
        for o, _ in self.st.outputs:
            backend.download(bufs[o], self.host_out[o])
            got = interior(self.st, self.host_out[o])
            if self.points is not None:
                got = got[self.points]
            v = compare(got, self.ref[o], rtol=self.rtol)
            if not v.ok:
                return Verdict(False, v.max_abs_error, v.scale, f"{o}: {v.detail}")
            if worst is None or v.max_abs_error > worst.max_abs_error:
                worst = v
        return worst or Verdict(True, 0.0, 0.0, "ok")

    def _zero_outputs(self) -> None:
        for o, _ in self.st.outputs:
            self.backend.zero(self.bufs[o], self.nbytes)  # type: ignore[attr-defined]


class OpenCLStencilRunner(_Base):
    """Runs Garvey-style OpenCL variants of one stencil on one OpenCL device.

    ``limits=False`` and ``image_layout="2d"`` are the paper-faithful
    generator settings (see ``apps.stencil.opencl_gen``).  A configuration the
    device cannot run (work-group larger than the device allows, local tile
    larger than its local memory, a 2-D image taller than it supports) is
    refused before it is compiled, as a FAILED result whose reason starts
    with "refused:".
    """

    def __init__(self, st: Stencil, backend: Any, *, limits: bool = True, image_layout: str = "3d",
                 **kw: Any) -> None:
        super().__init__(st, **kw)
        self.limits = limits
        self.image_layout = image_layout
        from measurement.opencl import Image3D

        self.backend = backend
        self.bufs = backend.upload(self.data)
        self.images: dict[str, Any] = {}
        self._Image3D = Image3D
        for o, _ in st.outputs:
            self.bufs[o] = backend.empty(self.nbytes)

    def build(self, config: Mapping[str, Any]) -> Any:
        """(kernel spec, program), or a failed ``Result``; safe to call from several threads."""
        from measurement.opencl import OpenCLBuildError

        refused = self.refusal(config)
        if refused:
            return Result(state="FAILED", reason=f"refused: {refused}")
        try:
            k = generate_opencl(self.st, config, limits=self.limits, image_layout=self.image_layout)
        except ValueError as exc:
            return Result(state="FAILED", reason=f"illegal: {exc}")
        try:
            prog = self.backend.build(k.source, options=getattr(self, "build_options", ()))
        except OpenCLBuildError as exc:
            return Result(state="FAILED", reason=f"build: {exc}")
        return k, prog

    def refusal(self, config: Mapping[str, Any]) -> str | None:
        """Why the device cannot run ``config`` (checked before compiling), or None."""
        from apps.stencil.opencl_gen import opencl_local_bytes

        be = self.backend
        wg = (config["wgx"], config["wgy"], config["wgz"])
        max_wg = getattr(be, "max_work_group_size", None)
        if max_wg is not None and wg[0] * wg[1] * wg[2] > max_wg:
            return f"work-group of {wg[0] * wg[1] * wg[2]} work-items > device maximum {max_wg}"
        for d, (w, m) in enumerate(zip(wg, getattr(be, "max_work_item_sizes", None) or (), strict=False)):
            if w > m:
                return f"work-group size {w} in dimension {d} > device maximum {m}"
        need = opencl_local_bytes(self.st, config)
        have = getattr(be, "local_mem_size", None)
        if need and have is not None and need > have:
            return f"local tile of {need} bytes > device local memory {have}"
        if config.get("mem") == "image" and self.image_layout == "2d":
            pz, py, px = self.st.padded_shape
            dev = getattr(be, "device", None)
            hmax = int(getattr(dev, "image2d_max_height", 0) or 0)
            wmax = int(getattr(dev, "image2d_max_width", 0) or 0)
            if (hmax and pz * py > hmax) or (wmax and px > wmax):
                return (f"2-D image of {px} x {pz * py} exceeds the device's {wmax} x {hmax}; "
                        "use a smaller --size or image_layout='3d'")
        return None

    def _upload_images(self) -> dict[str, Any]:
        if self.image_layout == "3d":
            return self.backend.upload({a: self._Image3D(self.data[a]) for a in self.st.inputs})  # type: ignore[no-any-return]
        import pyopencl as cl  # lazily: only the image variant needs it here

        out: dict[str, Any] = {}
        fmt = cl.ImageFormat(cl.channel_order.R, cl.channel_type.FLOAT)
        for a in self.st.inputs:
            arr = np.ascontiguousarray(self.data[a], np.float32)
            flat = arr.reshape(arr.shape[0] * arr.shape[1], arr.shape[2])
            flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
            # create_image: the constructor of current PyOpenCL (calling Image() directly is deprecated "to
            # stop working in 2026"); Image() where a release has no create_image
            make = getattr(cl, "create_image", None) or cl.Image
            out[a] = make(self.backend.context, flags, fmt,  # type: ignore[arg-type]
                          shape=(flat.shape[1], flat.shape[0]), hostbuf=flat)
        return out

    def measure(self, built: Any) -> Result:
        """Time and verify what ``build`` returned."""
        if isinstance(built, Result):
            return built
        k, prog = built
        if k.images and not self.backend.image_support:
            return Result(state="FAILED", reason="refused: device has no image support")
        if k.images and not self.images:
            try:
                self.images = self._upload_images()
            except Exception as exc:  # noqa: BLE001 - pyopencl raises several types here
                return Result(state="FAILED", reason=f"refused: image upload: {exc}")
        args = [self.images[a] if a in k.images else self.bufs[a] for a in k.args]
        return self.backend.run(prog, k.name, global_size=k.global_size, local_size=k.local_size, args=args,
                                before=self._zero_outputs, verify=lambda: self._verify(self.backend, self.bufs),
                                **self.timing)

    def __call__(self, config: Mapping[str, Any]) -> Result:
        return self.measure(self.build(config))


def _smem_optin(backend: Any) -> int | None:
    """The device's maximum shared memory per block with opt-in, or None when it cannot be read.

    A stand-in backend (tests) states it as ``max_shared_memory_optin``; a
    ``CudaBackend`` is asked through PyCUDA (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
    232,448 B on the H100).
    """
    stated = getattr(backend, "max_shared_memory_optin", None)
    if stated is not None:
        return int(stated)
    try:
        import pycuda.driver as drv

        return int(backend.device.get_attribute(drv.device_attribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN))
    except Exception:  # noqa: BLE001 - no PyCUDA, no device, an old PyCUDA: the launch itself will say
        return None


class CudaStencilRunner(_Base):
    """Runs csTuner-style CUDA variants of one stencil on one CUDA device.

    A configuration whose dynamic shared memory (``dsmem`` rings) exceeds the
    device's opt-in maximum per block is refused before it is compiled, as a
    FAILED result whose reason starts with "refused:"; the others launch with
    the opt-in set and their bytes passed (``CudaBackend.run(shared=...)``).
    """

    def __init__(self, st: Stencil, backend: Any, *, compile_timeout: float = 120.0, **kw: Any) -> None:
        super().__init__(st, **kw)
        self.backend = backend
        #: the device's shared memory per block with opt-in (None: unknown, the launch decides)
        self.smem_optin = _smem_optin(backend)
        self.bufs = backend.upload(self.data)
        for o, _ in st.outputs:
            self.bufs[o] = backend.empty(self.nbytes)
        self.bufs["coefg"] = backend.upload({"c": np.asarray(st.coefs or [0.0], st.dtype)})["c"]
        self.last_build: Any = None
        self.compile_timeout = compile_timeout
        #: sampled verification gathers the sampled points on the device (None: not yet checked against
        #: the whole-grid download, True: checked and in use, False: the download is used)
        self.gather_verify: bool | None = None if self.points is not None and hasattr(backend, "gather") else False
        self._gather_index: Any = None

    def build(self, config: Mapping[str, Any]) -> Any:
        """(kernel spec, cubin build), or a failed ``Result``; needs no GPU, thread-safe."""
        from measurement.cuda import CudaBuildError, compile_cuda

        try:
            k = generate_cuda(self.st, config)
        except ValueError as exc:
            return Result(state="FAILED", reason=f"illegal: {exc}")
        if k.dynamic_smem and self.smem_optin is not None and k.dynamic_smem > self.smem_optin:
            return Result(state="FAILED", reason=f"refused: {k.dynamic_smem} bytes of dynamic shared memory per "
                                                 f"block > device maximum {self.smem_optin} (with opt-in)")
        try:
            build = compile_cuda(k.source, arch=self.backend.arch, options=k.options, timeout=self.compile_timeout)
        except CudaBuildError as exc:
            return Result(state="FAILED", reason=f"build: {exc}")
        return k, build

    def _verify(self, backend: Any, bufs: Mapping[str, Any]) -> Verdict:
        """Check the outputs; with a sample, gather only the sampled points on the device.

        The first sampled check of a runner does both, the gather and the
        whole-grid download, and keeps the gather only if they agree bit for
        bit; an error or a difference falls back to the download for good
        (a slower check, never a wrong one).
        """
        if self.gather_verify is False:
            return super()._verify(backend, bufs)
        try:
            got = self._gathered(backend, bufs)
        except Exception as exc:  # noqa: BLE001 - no nvcc, an old PyCUDA, a driver error: use the download
            _log.warning("sampled verification on the device failed (%s); downloading whole outputs instead", exc)
            self.gather_verify = False
            return super()._verify(backend, bufs)
        if self.gather_verify is None:
            full = {}
            for o, _ in self.st.outputs:
                backend.download(bufs[o], self.host_out[o])
                full[o] = interior(self.st, self.host_out[o])[self.points]
            same = all(np.array_equal(got[o], full[o], equal_nan=True) for o, _ in self.st.outputs)
            if not same:
                _log.warning("sampled verification on the device disagreed with the download; using the download")
            self.gather_verify = same
            got = full
        worst: Verdict | None = None
        for o, _ in self.st.outputs:
            v = compare(got[o], self.ref[o], rtol=self.rtol)
            if not v.ok:
                return Verdict(False, v.max_abs_error, v.scale, f"{o}: {v.detail}")
            if worst is None or v.max_abs_error > worst.max_abs_error:
                worst = v
        return worst or Verdict(True, 0.0, 0.0, "ok")

    def _gathered(self, backend: Any, bufs: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """The outputs' values at the sampled points, gathered on the device (indices uploaded once)."""
        assert self.points is not None
        if self._gather_index is None:
            oz, oy, ox = self.st.origin
            _, py, px = self.st.padded_shape
            z, y, x = (np.asarray(p, np.int64) for p in self.points)
            flat = ((z + oz) * py + (y + oy)) * px + (x + ox)
            self._gather_index = backend.upload({"i": flat})["i"]
        n = len(self.points[0])
        return {o: backend.gather(bufs[o], self._gather_index, np.empty(n, self.st.dtype)) for o, _ in self.st.outputs}

    def measure(self, built: Any) -> Result:
        """Launch, time and verify what ``build`` returned (in the calling thread's context)."""
        if isinstance(built, Result):
            return built
        k, build = built
        self.last_build = build
        consts = {n: np.asarray(v, self.st.dtype) for n, v in k.constants.items()}
        extra = {"shared": list(k.shared)} if k.shared else {}  # only dsmem kernels: other backends need not know
        with self.backend.active():
            res = self.backend.run(build, k.kernels, grid=k.grid, block=k.block, args=[self.bufs[a] for a in k.args],
                                   constants=consts, before=self._zero_outputs,
                                   verify=lambda: self._verify(self.backend, self.bufs), **self.timing, **extra)
        if k.shared:  # ptxas's smem_bytes counts static shared memory only
            res.metrics["dynamic_smem_bytes"] = float(k.dynamic_smem)
        return res  # type: ignore[no-any-return]

    def __call__(self, config: Mapping[str, Any]) -> Result:
        return self.measure(self.build(config))
