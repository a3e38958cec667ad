"""``apps.stencil`` seeded by the work-group predictor (``--seed-from-model``).

    ensemble-tuner run apps.workgroup.seeded:SeededStencilApp --pattern star --dims 2 --radius 1 \
        --size 256 --seed-from-model speedup --test-limit 40

Why a subclass here rather than an edit of ``apps/stencil``: the stencil app
already has the ``seed_configurations()`` hook; this app adds the flag and
answers the hook with the predicted size.  The stencil's 2-D pattern is
described as the equivalent SkelCL kernel of :mod:`apps.workgroup.kernels`
(border = the pattern's radius in each direction, one tap per offset), whose
source gives the kernel features; the device features come from the OpenCL
device the app measures on.  The prediction is made over the sizes the
stencil's own space allows (``wgy`` x ``wgx`` with the rest of Garvey's
baseline configuration) that the training data also holds, so it is always a
valid configuration and never an extrapolation to sizes never measured; the
app's usual baseline stays as the second seed.  With ``--seed-technique`` the
seed goes through the ``WorkgroupSeed`` technique instead, which then hands
over to ``--technique``.
"""

from __future__ import annotations

import argparse
import logging
from typing import Any

from apps.stencil.app import StencilApp
from apps.stencil.opencl_gen import opencl_baseline, opencl_is_legal
from apps.stencil.patterns import pattern_offsets
from apps.workgroup.data import load, merge
from apps.workgroup.features import device_features
from apps.workgroup.kernels import StencilKernel, opencl_source
from apps.workgroup.predict import predict, shipped_predictor, train
from techniques.workgroup import METHODS

__all__ = ["SeededStencilApp", "equivalent_kernel"]

_log = logging.getLogger("ensemble.apps.workgroup")


def equivalent_kernel(pattern: str, radius: int, dtype: str) -> StencilKernel:
    """The SkelCL-style kernel with the same 2-D offsets as ``apps.stencil``'s pattern."""
    offs = pattern_offsets(pattern if pattern != "dense" else "box", 2, radius)
    taps = tuple((int(o[-2]), int(o[-1]), 1.0 / len(offs)) for o in offs)
    return StencilKernel(f"{pattern}{radius}.{dtype}", pattern, radius, radius, radius, radius, dtype, taps)


class SeededStencilApp(StencilApp):
    """``StencilApp`` whose first configuration is the predicted work-group size."""

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        super().add_arguments(parser)
        g = parser.add_argument_group("work-group prediction (Cummins et al.)")
        g.add_argument("--seed-from-model", nargs="?", const="speedup", choices=METHODS, default=None,
                       help="seed the run with the size this method predicts (default method: speedup)")
        g.add_argument("--seed-model", default="J48", help="classifier for --seed-from-model classifier")
        g.add_argument("--seed-data", nargs="+", metavar="DIR",
                       help="train on these extracts (default: the one shipped with the package)")

    def predicted_config(self) -> tuple[dict[str, Any], Any]:
        """(the seeded configuration, the Prediction) for this stencil on this app's device."""
        st = self.stencil
        if len(st.shape) != 3 or st.halo[0] != 0:
            raise ValueError("--seed-from-model: the predictor knows 2-D stencils; use --dims 2")
        rad = int(getattr(self.args, "radius", None) or 1)
        dtype = "double" if st.dtype == "float64" else "float"
        k = equivalent_kernel(getattr(self.args, "pattern", None) or "star", rad, dtype)
        be = self.runner().backend
        space = self.space()
        base = opencl_baseline()
        pool = []
        for wy in space["wgy"].values():
            for wx in space["wgx"].values():
                c = dict(base, wgx=wx, wgy=wy)
                if space.is_valid(c) and opencl_is_legal(st, c):  # the generator's own limits too
                    pool.append((int(wy), int(wx)))
        _, ny, nx = st.shape
        method, model = self.args.seed_from_model, getattr(self.args, "seed_model", None) or "J48"
        dirs = getattr(self.args, "seed_data", None)
        predictor = (train(method, model=model, data=merge(*[load(d) for d in dirs])) if dirs
                     else shipped_predictor(method, model))
        known = [w for w in pool if w in set(predictor.pool)]  # candidates from prior observations (Alg. 2)
        pool = known or pool
        pred = predict(predictor, opencl_source(k),
                       device_features(be.device), ny, nx, dtype, int(be.max_work_group_size), pool=pool)
        return dict(base, wgx=pred.size[1], wgy=pred.size[0]), pred

    def seed_configurations(self) -> list[dict[str, Any]]:
        seeds = super().seed_configurations()
        if not getattr(self.args, "seed_from_model", None):
            return seeds
        config, pred = self.predicted_config()
        _log.info("work-group prediction (%s): %s x %s%s", pred.method, pred.size[0], pred.size[1],
                  f" ({pred.note})" if pred.note else "")
        self.prediction = pred
        return [config] + [s for s in seeds if s != config]
