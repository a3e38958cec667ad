"""Exhaustive work-group sweeps of one scenario, stored as an ordinary run (Cummins et al., Section 5).

A *scenario* is (device, kernel, dataset size and type).  :class:`WorkgroupApp`
is a ``TunerApp`` over the two parameters ``wr`` (rows) and ``wc`` (columns)
whose legal space is Eq. (1) without the refused set: ``wr * wc <= W_max(s)``
with ``W_max(s)`` the smaller of the device's and the compiled kernel's
maximum, each side within the device's per-dimension limit.  Refused sizes
are only found by launching (FAILED ``refused: ...``): that includes a tile
larger than the device's local memory, which we check before launching so
every device reports it the same way.

Why a run per scenario through ``ensemble.tune``: the sweep then resumes
(``--resume`` finds the measured sizes in the database and skips them), its
data can be re-read with the project's storage API (:mod:`apps.workgroup.data`)
and ``ensemble-tuner best/report`` work on it.  The technique is ``Random``
without replacement, which enumerates a finite space exactly once.

Grids (``sweep_values``): ``paper`` is every multiple of 2 up to the maximum
(Section 5); ``compact`` keeps the powers of two and three times the powers
of two (2, 4, 6, 8, 12, 16, 24, ...), about a tenth of the sizes, which is
what the few device minutes allow; ``pow2`` keeps only powers of two, for
PoCL, which compiles a work-group function per distinct local size (about
0.2 s each on the shared CPU).  Sides never exceed the matrix's own side
(``wr <= rows``, ``wc <= cols``): a larger side only launches padding.
Both are listed as differences in docs/CUMMINS.md.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from apps.workgroup.features import dataset_features, device_features, kernel_features
from apps.workgroup.kernels import StencilKernel, opencl_source, reference, tile_bytes
from ensemble.app import TunerApp
from ensemble.errors import ConfigurationError
from ensemble.result import Result
from ensemble.space import Enum, SearchSpace

__all__ = ["Scenario", "WorkgroupApp", "sweep_scenario", "sweep_values"]


def sweep_values(limit: int, grid: str = "compact") -> list[int]:
    """Side lengths tried for rows and columns, up to ``limit`` (see the module docstring)."""
    if grid == "paper":
        return list(range(2, limit + 1, 2))
    if grid == "pow2":
        return [1 << p for p in range(1, 16) if (1 << p) <= limit]
    if grid == "compact":
        vals = {v for p in range(1, 16) for v in (1 << p, 3 << (p - 1)) if 2 <= v <= limit}
        return sorted(vals)
    raise ConfigurationError(f"sweep_values(grid={grid!r}): use 'paper', 'compact' or 'pow2'")


@dataclass(frozen=True)
class Scenario:
    """One scenario s = (device, kernel, dataset)."""

    kernel: StencilKernel
    rows: int
    cols: int

    def run_name(self, device_name: str) -> str:
        slug = re.sub(r"[^A-Za-z0-9]+", "-", device_name).strip("-").lower()[:40]
        return f"wg:{slug}:{self.kernel.name}:{self.rows}x{self.cols}"


class WorkgroupApp(TunerApp):
    """Measure one scenario at every legal work-group size (``wr`` x ``wc``)."""

    def __init__(self, scenario: Scenario, backend: Any, *, grid: str = "compact", repeats: int = 3,
                 warmup: int = 1, verify_sample: int | None = 2048, seed: int = 0) -> None:
        super().__init__()
        import pyopencl as cl

        self._cl = cl
        self.scenario = scenario
        self.backend = backend
        self.grid = grid
        self.repeats = repeats
        self.warmup = warmup
        self.verify_sample = verify_sample
        k = scenario.kernel
        self.source = opencl_source(k)
        self.program = backend.build(self.source)
        kern = self.program.stencil
        self.kernel_max = int(kern.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, backend.device))
        self.w_max = min(self.kernel_max, backend.max_work_group_size)
        rng = np.random.default_rng(seed)
        if k.dtype == "int":
            self.host_in = rng.integers(0, 2, size=(scenario.rows, scenario.cols)).astype(k.np_dtype)
        else:
            self.host_in = rng.uniform(-1.0, 1.0, size=(scenario.rows, scenario.cols)).astype(k.np_dtype)
        self.gold = reference(k, self.host_in)
        self.host_out = np.empty_like(self.host_in)
        bufs = backend.upload({"in": self.host_in, "out": np.zeros_like(self.host_in)})
        self.buf_in, self.buf_out = bufs["in"], bufs["out"]
        self._lock = threading.Lock()

    # -- what the sweep records about the scenario ---------------------------------
    def features(self) -> dict[str, Any]:
        """f(s) and the facts the evaluation needs (W_max(s), names), JSON-able."""
        k, s = self.scenario.kernel, self.scenario
        return {"device": self.backend.name, "platform": self.backend.platform_name, "kernel": k.name,
                "family": k.family, "dtype": k.dtype, "rows": s.rows, "cols": s.cols, "w_max": self.w_max,
                "grid": self.grid,
                "device_features": device_features(self.backend.device),
                "kernel_features": kernel_features(self.source),
                "dataset_features": dataset_features(s.rows, s.cols, k.np_dtype.itemsize, k.dtype)}

    # -- tuner API ---------------------------------------------------------------------
    def space(self) -> SearchSpace:
        item = self.backend.max_work_item_sizes
        sc = self.scenario
        rows = [v for v in sweep_values(self.w_max, self.grid) if v <= min(item[1], sc.rows)]
        cols = [v for v in sweep_values(self.w_max, self.grid) if v <= min(item[0], sc.cols)]
        s = SearchSpace()
        s.add(Enum("wr", rows), Enum("wc", cols))
        s.require(f"wr * wc <= {self.w_max}", name="W_max(s)")
        return s

    def run(self, config: dict[str, Any], limit: float | None) -> Result:
        wr, wc = int(config["wr"]), int(config["wc"])
        k, s = self.scenario.kernel, self.scenario
        need = tile_bytes(k, wr, wc)
        if need > self.backend.local_mem_size:
            return Result(state="FAILED", reason=f"refused: tile of {need} bytes > local memory "
                                                 f"{self.backend.local_mem_size}")
        gsize = (-(-s.cols // wc) * wc, -(-s.rows // wr) * wr)
        args = (self.buf_in, self.buf_out, self._cl.LocalMemory(need), np.int32(s.rows), np.int32(s.cols))

        def verify() -> Any:
            from measurement.verify import compare

            self.backend.download(self.buf_out, self.host_out)
            rtol = 0.0 if k.dtype == "int" else (1e-3 if k.dtype == "float" else 1e-9)
            return compare(self.host_out, self.gold, rtol=rtol, atol=0.0 if k.dtype == "int" else 1e-6,
                           sample=self.verify_sample)

        with self._lock:
            self.backend.zero(self.buf_out, self.host_in.nbytes)
            return self.backend.run(self.program, "stencil", global_size=gsize, local_size=(wc, wr), args=args,
                                    verify=verify, warmup=self.warmup, repeats=self.repeats)


def sweep_scenario(scenario: Scenario, backend: Any, database: str, *, grid: str = "compact",
                   repeats: int = 3, seed: int = 0) -> str:
    """Measure every legal size of ``scenario`` into run ``scenario.run_name(device)``; resumes.

    Stores f(s) in the run's state under ``"scenario"``.  Returns the run name.
    """
    from ensemble.storage import Storage
    from ensemble.tune import tune

    app = WorkgroupApp(scenario, backend, grid=grid, repeats=repeats, seed=seed)
    name = scenario.run_name(backend.name)
    with Storage(database) as st:
        run = st.get_run(name)
        if run is not None and (st.get_state(run.id, "scenario") or {}).get("complete"):
            return name
    n = app.space().count_valid() or 0
    # resume a started sweep of this scenario; --resume on a run that does not exist yet is refused
    tune(app, database=database, run_name=name, resume=run is not None, technique="Random", test_limit=n,
         seed=seed, parallelism=1)
    with Storage(database) as st:
        run = st.get_run(name)
        assert run is not None
        st.put_state(run.id, "scenario", {**app.features(), "complete": True})
    return name
