"""Illegal configurations are never generated: the spaces and the generators agree on the rules."""

from __future__ import annotations

import numpy as np
import pytest

from apps.stencil.cstuner import CSTUNER_STENCILS, cstuner_stencil
from apps.stencil.cuda_gen import (
    CUDA_PARAMS,
    OPT_IN_PARAMS,
    cuda_baseline,
    cuda_why_illegal,
    generate_cuda,
)
from apps.stencil.opencl_gen import (
    OPENCL_PARAMS,
    generate_opencl,
    opencl_baseline,
    opencl_why_illegal,
)
from apps.stencil.patterns import synthetic
from apps.stencil.space import cuda_space, opencl_space
from tests.apps.stencil_cases import (
    CUDA_OPTS,
    OPENCL_OPTS,
    cuda_case_applies,
    cuda_config,
    opencl_config,
)


@pytest.mark.parametrize("name", ["j3d7pt", "hypterm", "rhs4center"])
def test_cuda_space_samples_only_legal_configurations(name: str) -> None:
    st = cstuner_stencil(name, 64)
    space = cuda_space(st)
    for c in space.sample(np.random.default_rng(1), 150):
        assert cuda_why_illegal(st, c) is None, c
        generate_cuda(st, c)  # does not raise


def test_cuda_rules_match_the_space_on_random_points() -> None:
    """Random points of the unconstrained product: space.is_valid == generator legality (the space with every
    opt-in parameter: the generator knows them all)."""
    st = cstuner_stencil("hypterm", 64)
    space = cuda_space(st, opt_in=OPT_IN_PARAMS)
    rng = np.random.default_rng(2)
    agree = legal = 0
    points = [{k: v[rng.integers(len(v))] for k, v in CUDA_PARAMS.items()} for _ in range(20000)]
    # few random points are legal (1 in 10^4): add legal points with one parameter changed, near the boundary
    for c in space.sample(rng, 300):
        k = list(CUDA_PARAMS)[rng.integers(len(CUDA_PARAMS))]
        points.append({**c, k: CUDA_PARAMS[k][rng.integers(len(CUDA_PARAMS[k]))]})
    for c in points:
        ok = cuda_why_illegal(st, c) is None
        legal += ok
        agree += ok == space.is_valid(c)
    assert agree == len(points)
    assert 0 < legal < len(points)


def test_illegal_cuda_configurations_are_refused_by_the_generator() -> None:
    st = cstuner_stencil("helmholtz", 64)
    bad = [{**cuda_baseline(), "bx": 64, "by": 32},        # 2048 threads
           {**cuda_baseline(), "smem": True},               # shared memory without streaming
           {**cuda_baseline(), "sd": "z", "retime": True},  # helmholtz is not retimable
           {**cuda_baseline(), "bx": 1, "by": 4},           # fewer than 32 threads
           {**cuda_baseline(), "sd": "z", "bz": 2, "by": 2}]
    for c in bad:
        assert cuda_why_illegal(st, c) is not None
        assert not cuda_space(st).is_valid(c)
        with pytest.raises(ValueError, match="illegal"):
            generate_cuda(st, c)


def test_opencl_space_samples_only_legal_configurations() -> None:
    st = synthetic("box", 3, 2, size=64)
    space = opencl_space(st, "extended")
    for c in space.sample(np.random.default_rng(3), 150):
        assert opencl_why_illegal(st, c) is None, c
        generate_opencl(st, c)
    # the paper's preset has no work-group / points bounds (the device refuses): legal without our limits
    for c in opencl_space(st).sample(np.random.default_rng(3), 150):
        assert opencl_why_illegal(st, c, limits=False) is None, c
        generate_opencl(st, c, limits=False, image_layout="2d")


def test_opencl_rules_match_the_space_on_random_points() -> None:
    st = synthetic("star", 3, 3, size=32)
    space = opencl_space(st, "extended")
    rng = np.random.default_rng(4)
    agree = legal = 0
    for _ in range(20000):  # about 1 in 3000 random points is legal
        c = {k: v[rng.integers(len(v))] for k, v in OPENCL_PARAMS.items()}
        ok = opencl_why_illegal(st, c) is None
        legal += ok
        agree += ok == space.is_valid(c)
    assert agree == 20000 and legal > 0


def test_garvey_restrictions() -> None:
    st = synthetic("star", 3, 1, size=32)
    assert "VX <= BX" in opencl_why_illegal(st, {**opencl_baseline(), "vx": 4}).replace("vx=4 must be <= bmx=1",
                                                                                          "VX <= BX")
    assert "W*B*C" in opencl_why_illegal(st, {**opencl_baseline(), "wgx": 16, "bmx": 4})
    assert opencl_why_illegal(st, {**opencl_baseline(), "wgx": 64, "wgy": 32}) is not None  # 2048 work-items


def test_shared_test_cases_are_legal() -> None:
    for name in CSTUNER_STENCILS:
        st = cstuner_stencil(name, 32)
        for opt in CUDA_OPTS:
            if not cuda_case_applies(opt, st):
                assert cuda_why_illegal(st, cuda_config(opt)) is not None
                continue
            assert cuda_why_illegal(st, cuda_config(opt)) is None, (name, opt)
    st = synthetic("box", 3, 2, size=32)
    for opt in OPENCL_OPTS:
        assert opencl_why_illegal(st, opencl_config(opt)) is None, opt


def test_app_builds_spaces_and_seeds_from_flags() -> None:
    import argparse

    from apps.stencil.app import StencilApp

    app = StencilApp(argparse.Namespace(stencil="j3d7pt", size=64, backend="cuda"))
    assert app.stencil.name == "j3d7pt" and app.stencil.shape == (64, 64, 64)
    assert app.seed_configurations() == [cuda_baseline()]
    app = StencilApp(argparse.Namespace(pattern="diamond", dims=2, radius=3, size=32, backend="opencl"))
    assert app.stencil.halo == (0, 3, 3)
    assert app.space().is_valid(opencl_baseline())
