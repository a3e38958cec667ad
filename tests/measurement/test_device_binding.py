"""Under mpirun each rank measures on its own device: CudaBackend / OpenCLBackend without a device.

The device APIs are faked (four CUDA GPUs, an OpenCL platform with three
devices) and so is the launcher's environment (MPICH's PMI_RANK and
MPI_LOCALRANKID), so the index selection is tested without several GPUs.  One
test opens the real OpenCL backend (PoCL: one device) as rank 1 of 2.
"""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from ensemble.errors import ConfigurationError

MPI_VARS = ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "OMPI_COMM_WORLD_RANK",
            "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "PMIX_RANK",
            "PMIX_SIZE", "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_LOCAL_RANK",
            "MV2_COMM_WORLD_LOCAL_SIZE", "SLURM_LOCALID", "PMI_LOCAL_RANK", "ENSEMBLE_DEVICES", "ENSEMBLE_MPI")


@pytest.fixture
def launcher(monkeypatch):  # type: ignore[no-untyped-def]
    """Set the environment mpirun gives local rank ``rank`` of ``size`` (None: no launcher)."""
    for v in MPI_VARS:
        monkeypatch.delenv(v, raising=False)

    def as_rank(rank: int | None, size: int = 4, **extra: str) -> None:
        for v in MPI_VARS:
            monkeypatch.delenv(v, raising=False)
        if rank is not None:
            for k, v in {"PMI_RANK": rank, "PMI_SIZE": size, "MPI_LOCALRANKID": rank,
                         "MPI_LOCALNRANKS": size}.items():
                monkeypatch.setenv(k, str(v))
        for k, v in extra.items():
            monkeypatch.setenv(k, v)

    return as_rank


# -- CUDA ------------------------------------------------------------------------

@pytest.fixture
def fake_cuda(monkeypatch):  # type: ignore[no-untyped-def]
    drv = types.ModuleType("pycuda.driver")

    class Error(Exception):
        pass

    class Ctx:
        def push(self) -> None:
            pass

    class Device:
        @staticmethod
        def count() -> int:
            return 4

        def __init__(self, i: int) -> None:
            self.i = i

        def retain_primary_context(self) -> Ctx:
            return Ctx()

        def name(self) -> str:
            return f"GPU {self.i}"

        def compute_capability(self) -> tuple[int, int]:
            return (9, 0)

    drv.Error = Error                       # type: ignore[attr-defined]
    drv.Device = Device                     # type: ignore[attr-defined]
    drv.Context = types.SimpleNamespace(pop=lambda: None)  # type: ignore[attr-defined]
    drv.init = lambda: None                 # type: ignore[attr-defined]
    pkg = types.ModuleType("pycuda")
    pkg.driver = drv                        # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pycuda", pkg)
    monkeypatch.setitem(sys.modules, "pycuda.driver", drv)


def _cuda(device: int | None = None) -> Any:
    from measurement.cuda import CudaBackend

    be = CudaBackend() if device is None else CudaBackend(device)
    be.close()
    return be


def test_cuda_ranks_of_a_host_spread_over_its_gpus(fake_cuda, launcher) -> None:  # type: ignore[no-untyped-def]
    launcher(None)
    assert _cuda().name == "GPU 0"                               # no MPI: device 0, as before
    got = []
    for rank in range(6):
        launcher(rank, size=6)
        got.append(_cuda().index)
    assert got == [0, 1, 2, 3, 0, 1]                             # local_rank % 4 GPUs
    launcher(1, size=1)
    assert _cuda().index == 0                                    # one rank on this host: nothing to spread


def test_cuda_explicit_device_and_environment_win(fake_cuda, launcher) -> None:  # type: ignore[no-untyped-def]
    launcher(1, size=4)
    assert _cuda(3).name == "GPU 3"                              # --device 3
    launcher(1, size=4, ENSEMBLE_DEVICES="2,3")
    assert _cuda().index == 3
    launcher(None, ENSEMBLE_DEVICES="2")
    assert _cuda().index == 2                                    # without MPI too
    from ensemble.errors import EnsembleError

    launcher(0, size=2, ENSEMBLE_DEVICES="7")
    with pytest.raises(EnsembleError, match="only 4 CUDA devices"):
        _cuda()


# -- OpenCL ----------------------------------------------------------------------

class _FakeCL:
    """Just enough of pyopencl for OpenCLBackend.__init__: platforms of named devices."""

    class Error(Exception):
        pass

    command_queue_properties = types.SimpleNamespace(PROFILING_ENABLE=1)

    def __init__(self, platforms: dict[str, list[str]], broken: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        self._platforms = [self._platform(p, devs) for p, devs in platforms.items()]
        self.broken = broken

    @staticmethod
    def _device(name: str) -> Any:
        return types.SimpleNamespace(name=name, max_work_group_size=256, max_work_item_sizes=[256, 256, 64],
                                     local_mem_size=65536, image_support=True)

    def _platform(self, name: str, devs: list[str]) -> Any:
        devices = [self._device(d) for d in devs]
        return types.SimpleNamespace(name=name, get_devices=lambda: devices)

    def get_platforms(self) -> list[Any]:
        return self._platforms

    def Context(self, devices: list[Any]) -> Any:  # pyopencl's name
        return types.SimpleNamespace(device=devices[0])

    def Program(self, ctx: Any, src: str) -> Any:
        cl = self

        class _P:
            def build(self) -> None:
                if ctx.device.name in cl.broken:
                    raise cl.Error("error: cannot build here")

        return _P()

    def CommandQueue(self, ctx: Any, properties: int = 0) -> Any:
        return object()


@pytest.fixture
def fake_cl(monkeypatch):  # type: ignore[no-untyped-def]
    import measurement.opencl as ocl

    def install(platforms: dict[str, list[str]], broken: set[str] = frozenset()) -> Any:  # type: ignore[assignment]
        cl = _FakeCL(platforms, broken)
        monkeypatch.setattr(ocl, "_cl", lambda: cl)
        return cl

    return install


def _ocl(platform: Any = None, device: Any = None) -> str:
    from measurement.opencl import OpenCLBackend

    return str(OpenCLBackend(platform, device).name)


def test_opencl_ranks_take_their_own_device_of_the_platform(fake_cl, launcher) -> None:  # type: ignore[no-untyped-def]
    fake_cl({"GPUs": ["gpu0", "gpu1", "gpu2"], "CPU": ["cpu"]})
    launcher(None)
    assert _ocl() == "gpu0"                                      # no MPI: first usable device, as before
    names = []
    for rank in range(4):
        launcher(rank, size=4)
        names.append(_ocl())
    assert names == ["gpu0", "gpu1", "gpu2", "gpu0"]             # local_rank % 3 devices
    launcher(2, size=4)
    assert _ocl(platform="GPUs") == "gpu2"                       # --platform only: still the rank's device
    assert _ocl(platform="CPU") == "cpu"                         # one device there: every rank shares it


def test_opencl_explicit_device_and_environment_win(fake_cl, launcher) -> None:  # type: ignore[no-untyped-def]
    fake_cl({"GPUs": ["gpu0", "gpu1", "gpu2"]})
    launcher(1, size=2)
    assert _ocl(platform=0, device=0) == "gpu0"                  # --device 0
    assert _ocl(platform=0, device="gpu2") == "gpu2"
    launcher(1, size=2, ENSEMBLE_DEVICES="0,2")
    assert _ocl() == "gpu2"
    launcher(0, size=2, ENSEMBLE_DEVICES="5")
    with pytest.raises(ConfigurationError, match="only 3"):
        _ocl()


def test_opencl_rank_device_that_cannot_build_falls_back(fake_cl, launcher) -> None:  # type: ignore[no-untyped-def]
    fake_cl({"GPUs": ["gpu0", "gpu1"]}, broken={"gpu1"})
    launcher(1, size=2)
    assert _ocl() == "gpu0"                                      # skipped like an unusable platform


@pytest.mark.opencl
def test_real_opencl_backend_as_rank_one_of_two(launcher) -> None:  # type: ignore[no-untyped-def]
    """PoCL exposes one device per platform: rank 1 of 2 binds to index 1 % 1 = 0 and still works."""
    from measurement.opencl import OpenCLBackend, opencl_available

    if not opencl_available():
        pytest.skip("no OpenCL platform")
    launcher(None)
    try:
        alone = OpenCLBackend()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"no usable OpenCL device ({str(exc).splitlines()[0][:120]})")
    launcher(1, size=2)
    ranked = OpenCLBackend()
    assert (ranked.platform_name, ranked.name) == (alone.platform_name, alone.name)
    ranked.build("__kernel void probe(__global float *a) { a[0] = 1.0f; }")
