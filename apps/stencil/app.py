"""``StencilApp``: tune a generated stencil kernel on OpenCL or CUDA.

Why one app for both generators: the command line, the data, the reference
check and the reported metrics (GB/s of compulsory traffic) are the same;
only the space and the kernel generator differ.  The device backend is made
lazily and shared by the measuring threads: kernels compile in parallel
(``compile``) and are measured one at a time (``run_compiled``, which the
drivers serialise), with the CUDA context made current in whichever thread
measures.
"""

from __future__ import annotations

import argparse
import threading
from typing import Any

from apps.stencil.cstuner import CSTUNER_STENCILS, cstuner_stencil
from apps.stencil.cuda_gen import OPT_IN_PARAMS, cuda_baseline
from apps.stencil.opencl_gen import opencl_baseline
from apps.stencil.patterns import PATTERNS, synthetic
from apps.stencil.space import cuda_space, opencl_space
from apps.stencil.spec import Stencil
from ensemble.app import TunerApp
from ensemble.errors import ConfigurationError, MissingExtraError
from ensemble.result import Result
from measurement.device_lock import DeviceLock

__all__ = ["StencilApp", "make_stencil_from_args"]


def make_stencil_from_args(args: argparse.Namespace) -> Stencil:
    """The stencil the flags describe: ``--stencil NAME`` or ``--pattern/--dims/--radius``."""
    size = getattr(args, "size", None)
    if getattr(args, "suite", None) == "garvey":
        from apps.stencil.garvey_suite import garvey_benchmark

        return garvey_benchmark(getattr(args, "benchmark", None) or "star3d_r1_none").stencil(size or 256)
    if getattr(args, "stencil", None):
        st = cstuner_stencil(args.stencil, size)
        if getattr(args, "dtype", None) == "float32":
            raise ConfigurationError("--dtype float32: the csTuner stencils are double precision; drop --dtype")
        return st
    radius = getattr(args, "radius", None)
    return synthetic(getattr(args, "pattern", None) or "star", getattr(args, "dims", None) or 3,
                     1 if radius is None else int(radius),
                     size=size or 256, dtype=getattr(args, "dtype", None) or "float32",
                     seed=getattr(args, "weights_seed", None) or 0)


class StencilApp(TunerApp):
    """Tune one stencil: Garvey's OpenCL space or csTuner's CUDA space."""

    def __init__(self, args: argparse.Namespace | None = None, **overrides: Any) -> None:
        super().__init__(args)
        for k, v in overrides.items():
            setattr(self.args, k, v)
        self.backend_name = getattr(self.args, "backend", None) or ("cuda" if getattr(self.args, "stencil", None)
                                                                    else "opencl")
        if self.backend_name not in ("opencl", "cuda"):
            raise ConfigurationError(f"--backend {self.backend_name!r}: use opencl or cuda")
        self.stencil = make_stencil_from_args(self.args)
        if getattr(self.args, "heuristic", None):  # a malformed file fails here, naming line and column
            from techniques.garvey import load_heuristic

            load_heuristic(self.args.heuristic)
        self._lock = threading.Lock()
        self._runner: Any = None
        dl = getattr(self.args, "device_lock", None)
        #: measurements take turns with every process naming the same file (compiles still overlap)
        try:
            self.device_lock = DeviceLock(dl) if dl else None
        except ValueError as exc:
            raise ConfigurationError(f"--device-lock {dl}: its directory does not exist; name a file in an "
                                     "existing directory, the same file in every process that shares the "
                                     "device") from exc
        #: an existing CudaBackend / OpenCLBackend to use instead of making one (benchmarks share one)
        self.device_backend: Any = None

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("stencil")
        g.add_argument("--stencil", choices=CSTUNER_STENCILS, help="one of csTuner's eight stencils (CUDA default)")
        g.add_argument("--pattern", choices=PATTERNS + ("dense",), help="synthetic pattern family (OpenCL default)")
        g.add_argument("--dims", type=int, choices=(1, 2, 3), help="pattern dimensionality (default 3)")
        g.add_argument("--radius", type=int, help="pattern radius 0..5 (default 1)")
        g.add_argument("--size", type=int, help="cube edge of the grid (default 256 synthetic, paper size csTuner)")
        g.add_argument("--dtype", choices=("float32", "float64"), help="synthetic stencils' type (default float32)")
        g.add_argument("--weights-seed", type=int, help="seed of the synthetic weights (default 0)")
        g.add_argument("--backend", choices=("opencl", "cuda"), help="kernel generator and device API")
        g.add_argument("--platform", help="OpenCL platform name part or index")
        g.add_argument("--device", help="OpenCL device name part or index; CUDA device index (default: under "
                       "mpirun, one device per rank of the host; docs/MPI.md)")
        g.add_argument("--verbose", action="store_true", help="show the OpenCL compiler's warnings")
        g.add_argument("--repeats", type=int, default=5, help="timed launches per configuration")
        g.add_argument("--warmup", type=int, default=1, help="untimed launches first")
        g.add_argument("--discard-first", type=int, default=0,
                       help="drop the first timed runs (papers: --repeats 4 --discard-first 1 --statistic mean)")
        g.add_argument("--statistic", choices=("median", "mean", "min"), default="median")
        g.add_argument("--verify-sample", type=int, default=None,
                       help="check this many random points instead of the whole output")
        g.add_argument("--suite", choices=("garvey",), help="garvey: Garvey & Abdelrahman's 104 OpenCL benchmarks")
        g.add_argument("--benchmark", help="with --suite garvey: e.g. star2d_r3_y (docs/GARVEY.md lists them)")
        g.add_argument("--cuda-opt-in", action="append", choices=OPT_IN_PARAMS, metavar="PARAM",
                       help="add a CUDA parameter that is built but not yet in the default space "
                            f"({', '.join(OPT_IN_PARAMS)}: docs/STENCILS.md); repeatable")
        g.add_argument("--opencl-preset", choices=("paper", "extended"), default="paper",
                       help="OpenCL space: the paper's (default) or our generator's wider one")
        g.add_argument("--heuristic", help="--technique garvey: dims, opts, hybrid or a specification file")
        g.add_argument("--loading", choices=("global", "vec", "local", "image"),
                       help="--technique garvey: fix the loading technique instead of predicting it")
        g.add_argument("--loading-model", help="--technique garvey: the loading-model file to predict with "
                       "(default: the shipped NVIDIA H100 one; techniques/garvey/data/loading_model_pocl.json for CPUs)")
        g.add_argument("--metrics", choices=("none", "ncu"), default="none",
                       help="ncu: also profile each CUDA trial with Nsight Compute (csTuner's metric set, "
                            "stored in the trial's metrics; about 1-3 s more per trial)")
        g.add_argument("--device-lock", metavar="FILE",
                       help="measure only while holding an exclusive lock on FILE, so processes sharing one device "
                            "(mpirun ranks on one GPU, runs side by side) time their kernels one at a time; the "
                            "wait is stored per trial as the metric device_lock_wait_s")

    # -- tuner API -----------------------------------------------------------------
    def space(self) -> Any:
        if self.backend_name == "cuda":
            return cuda_space(self.stencil, getattr(self.args, "cuda_opt_in", None) or ())
        from apps.stencil.garvey_suite import garvey_hints

        s = opencl_space(self.stencil, getattr(self.args, "opencl_preset", None) or "paper")
        hints = garvey_hints(self.stencil)
        for k, arg in (("heuristic", "heuristic"), ("loading", "loading"), ("model", "loading_model")):
            if getattr(self.args, arg, None):
                hints[k] = getattr(self.args, arg)
        s.hints = {"garvey": hints}  # read by the garvey technique (techniques may not import apps)
        return s

    def seed_configurations(self) -> list[dict[str, Any]]:
        base = (cuda_baseline(getattr(self.args, "cuda_opt_in", None) or ()) if self.backend_name == "cuda"
                else opencl_baseline())
        return [base] if self.space().is_valid(base) else []

    def runner(self) -> Any:
        with self._lock:
            if self._runner is None:
                self._runner = self._make_runner()
            return self._runner

    def check_environment(self) -> None:
        """Refuse ``--backend cuda`` at start when PyCUDA is missing (else every trial fails)."""
        import importlib.util

        if self.backend_name == "cuda" and self.device_backend is None and importlib.util.find_spec("pycuda") is None:
            raise MissingExtraError("--backend cuda needs PyCUDA, which is not installed; install it with "
                                    "pip install 'ensemble-tuner[cuda]' (builds against the CUDA toolkit), "
                                    "or tune with --backend opencl")

    def _make_runner(self) -> Any:
        a = self.args
        kw: dict[str, Any] = {"warmup": getattr(a, "warmup", 1), "repeats": getattr(a, "repeats", 5),
                               "discard_first": getattr(a, "discard_first", 0),
                               "statistic": getattr(a, "statistic", "median"),
                               "sample": getattr(a, "verify_sample", None)}
        if self.backend_name == "cuda":
            from apps.stencil.runner import CudaStencilRunner
            from measurement.cuda import CudaBackend

            dev = getattr(a, "device", None)
            be = self.device_backend or CudaBackend(int(dev) if dev is not None else None)  # None: rank-bound
            return CudaStencilRunner(self.stencil, be, **kw)
        from apps.stencil.runner import OpenCLStencilRunner
        from measurement.opencl import OpenCLBackend

        be = self.device_backend or OpenCLBackend(getattr(a, "platform", None), getattr(a, "device", None))
        paper = (getattr(a, "opencl_preset", None) or "paper") == "paper"
        runner = OpenCLStencilRunner(self.stencil, be, limits=not paper, image_layout="2d" if paper else "3d", **kw)
        runner.build_options = () if getattr(a, "verbose", False) else ("-w",)   # compiler chatter only with --verbose
        return runner

    def compile(self, config: dict[str, Any]) -> Any:
        """Generate and build (nvcc or the OpenCL compiler); failures come back as a Result."""
        return self.runner().build(config)

    def run_compiled(self, config: dict[str, Any], artifact: Any, limit: float | None) -> Result:
        if isinstance(artifact, Result) or self.device_lock is None:  # a failed build needs no device
            return self._measure(config, artifact)
        with self.device_lock.held() as waited:
            res = self._measure(config, artifact)
        res.metrics["device_lock_wait_s"] = waited
        return res

    def _measure(self, config: dict[str, Any], artifact: Any) -> Result:
        """Every use of the device for one trial: the timed launches, verification and (opt-in) Nsight Compute."""
        res = self.runner().measure(artifact)
        if res.time:
            res.metrics["gbs"] = self.stencil.compulsory_bytes() / res.time / 1e9
        if getattr(self.args, "metrics", "none") == "ncu" and res.state == "OK" and self.backend_name == "cuda":
            from apps.stencil.cuda_metrics import nsight_metrics

            res.metrics.update(nsight_metrics(self.args, config))
        return res  # type: ignore[no-any-return]
