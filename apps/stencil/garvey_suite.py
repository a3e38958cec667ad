"""Garvey and Abdelrahman's 104 synthetic benchmarks and their static features.

Why a module of its own: the suite (which stencils), the features the
data-loading predictor reads (Sec. 6.1) and the hints the ``garvey``
technique needs from the app (array size, parameter names, how each loading
technique maps onto our parameters) are facts about the stencils; the
technique (``techniques.garvey``) may not import apps, so the app hands them
over as plain dicts.

The suite follows Table 2 of Garvey & Abdelrahman, "A Strategy for Automatic
Performance Tuning of Stencil Computations on GPUs", Scientific Programming
2018 (104 kernels):

============  ==========  ======================  ================================
pattern       radius      dimensionality          orientations ("unique dim")
============  ==========  ======================  ================================
star          1-5         2-D, 3-D                2-D: x, y, z; 3-D: none  (20)
thumbtack     1-5         3-D                     pin along x, y, z         (15)
diamond       2-5         2-D, 3-D                2-D: x, y, z; 3-D: none  (16)
no-corners    1 (3-D), 2-5  2-D, 3-D              2-D: x, y, z; 3-D: none  (17)
dense         0 (1-D), 1-5  1-D, 2-D, 3-D         1-D/2-D: x, y, z; 3-D    (36)
============  ==========  ======================  ================================

(A radius-1 diamond and a 2-D radius-1 no-corners are the star, which is why
Table 2 has none.)  Features (Sec. 6.1): stencil size (points), dimensionality,
density (size / volume of the bounding box) and the unique dimension.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from apps.stencil.patterns import pattern_offsets, synthetic
from apps.stencil.spec import Stencil
from ensemble.errors import ConfigurationError

__all__ = ["LOADINGS", "GarveyBenchmark", "garvey_benchmark", "garvey_features", "garvey_hints", "garvey_suite", "stratified_subset"]

#: the four data-loading techniques of Sec. 4.7 / 6.1 and the parameter values each fixes
LOADINGS: dict[str, dict[str, Any]] = {
    "global": {"fixed": {"mem": "global", "vx": 1, "bmx": 1}, "constants": {"VMIN": 1, "VMAX": 1}},
    "vec": {"fixed": {"mem": "global"}, "constants": {"VMIN": 2, "VMAX": 16}},
    "local": {"fixed": {"mem": "local", "vx": 1, "bmx": 1}, "constants": {"VMIN": 1, "VMAX": 1}},
    "image": {"fixed": {"mem": "image", "vx": 1, "bmx": 1}, "constants": {"VMIN": 1, "VMAX": 1}},
}

#: the paper's parameter names (Table 1) -> ours
PAPER_NAMES = {"WX": "wgx", "WY": "wgy", "WZ": "wgz", "BX": "bmx", "BY": "bmy", "BZ": "bmz",
               "CX": "cmx", "CY": "cmy", "CZ": "cmz", "VX": "vx"}


@dataclass(frozen=True)
class GarveyBenchmark:
    """One of the 104 kernels: pattern, dimensionality, radius, unique dimension."""

    pattern: str
    dims: int
    radius: int
    unique: str | None

    @property
    def name(self) -> str:
        return f"{self.pattern}{self.dims}d_r{self.radius}_{self.unique or 'none'}"

    def stencil(self, size: int = 256, seed: int = 0) -> Stencil:
        return synthetic(self.pattern, self.dims, self.radius, size=size, seed=seed, unique=self.unique)

    def features(self) -> dict[str, Any]:
        return garvey_features(self.pattern, self.dims, self.radius, self.unique)


def garvey_suite() -> list[GarveyBenchmark]:
    """The 104 benchmarks of Table 2, in a fixed order."""
    out: list[GarveyBenchmark] = []
    xyz = ("x", "y", "z")
    for r in range(1, 6):
        out += [GarveyBenchmark("star", 2, r, u) for u in xyz] + [GarveyBenchmark("star", 3, r, None)]
    for r in range(1, 6):
        out += [GarveyBenchmark("thumbtack", 3, r, u) for u in xyz]
    for r in range(2, 6):
        out += [GarveyBenchmark("diamond", 2, r, u) for u in xyz] + [GarveyBenchmark("diamond", 3, r, None)]
    out.append(GarveyBenchmark("nocorners", 3, 1, None))
    for r in range(2, 6):
        out += [GarveyBenchmark("nocorners", 2, r, u) for u in xyz] + [GarveyBenchmark("nocorners", 3, r, None)]
    out.append(GarveyBenchmark("box", 1, 0, None))
    for r in range(1, 6):
        out += [GarveyBenchmark("box", 1, r, u) for u in xyz] + [GarveyBenchmark("box", 2, r, u) for u in xyz]
        out.append(GarveyBenchmark("box", 3, r, None))
    return out


def garvey_benchmark(name: str) -> GarveyBenchmark:
    """The suite's benchmark called ``name`` (e.g. ``star2d_r3_y``, ``box3d_r2_none``)."""
    by = {b.name: b for b in garvey_suite()}
    if name not in by:
        raise ConfigurationError(f"benchmark={name!r} is not in the Garvey suite; names are "
                                 f"<pattern><dims>d_r<radius>_<unique>, e.g. {', '.join(list(by)[:4])} "
                                 "(docs/GARVEY.md lists all 104)")
    return by[name]


def stratified_subset(k: int, seed: int = 0) -> list[GarveyBenchmark]:
    """``k`` benchmarks spread over the strata (pattern x dimensionality), each stratum in turn.

    Why: when the device time does not allow all 104, every pattern and
    dimensionality should still be represented; within a stratum the pick is
    seeded-random, and radii are taken in a round-robin over the stratum.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    strata: dict[tuple[str, int], list[GarveyBenchmark]] = {}
    for b in garvey_suite():
        strata.setdefault((b.pattern, b.dims), []).append(b)
    pools = {key: [v[i] for i in rng.permutation(len(v))] for key, v in sorted(strata.items())}
    out: list[GarveyBenchmark] = []
    while len(out) < k and any(pools.values()):
        for key in sorted(pools):
            if pools[key] and len(out) < k:
                out.append(pools[key].pop())
    return out


def garvey_features(pattern: str, dims: int, radius: int, unique: str | None) -> dict[str, Any]:
    """Sec. 6.1's features: size, dimensionality, density, unique dimension."""
    offs = pattern_offsets(pattern, dims, radius, unique)
    box = 1
    for ax in range(3):
        vals = [o[ax] for o in offs]
        box *= max(vals) - min(vals) + 1
    if radius == 0:
        unique = None
    return {"size": len(offs), "dims": dims, "density": len(offs) / box, "unique": unique or "none"}


def garvey_hints(st: Stencil) -> dict[str, Any]:
    """What the ``garvey`` technique needs from the app, as plain data (see module docstring)."""
    nz, ny, nx = st.shape
    meta = st.meta or {}
    features = None
    if "pattern" in meta:
        features = garvey_features(meta["pattern"], meta["dims"], len(meta.get("offsets", [])) and
                                   max(max(abs(d) for d in o) for o in meta["offsets"]), meta.get("unique"))
    return {"constants": {"NX": nx, "NY": ny, "NZ": nz}, "names": dict(PAPER_NAMES),
            "loadings": {k: {"fixed": dict(v["fixed"]), "constants": dict(v["constants"])}
                         for k, v in LOADINGS.items()},
            "features": features}
