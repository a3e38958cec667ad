"""Stencil descriptions: pattern families, the csTuner formulas, the NumPy reference."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from apps.stencil.cstuner import CSTUNER_STENCILS, cstuner_stencil
from apps.stencil.expr import Access, count_flops
from apps.stencil.patterns import PATTERNS, pattern_offsets, synthetic


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("dims", [1, 2, 3])
def test_pattern_offsets_stay_in_their_dimensions_and_radius(pattern: str, dims: int) -> None:
    for r in range(6):
        offs = pattern_offsets(pattern, dims, r)
        assert (0, 0, 0) in offs
        assert len(set(offs)) == len(offs)
        for o in offs:
            assert max(abs(v) for v in o) <= r
            assert all(o[ax] == 0 for ax in range(3 - dims))  # unused axes (z first) stay 0
        if r == 0:
            assert offs == [(0, 0, 0)]


def test_pattern_shapes_match_their_definitions() -> None:
    assert len(pattern_offsets("star", 3, 2)) == 13
    assert len(pattern_offsets("box", 3, 1)) == 27
    assert len(pattern_offsets("diamond", 2, 2)) == 13
    assert len(pattern_offsets("nocorners", 2, 1)) == 5  # 3x3 minus 4 corners
    assert (0, 1, 1) in pattern_offsets("nocorners", 3, 1)
    assert (1, 1, 1) not in pattern_offsets("nocorners", 3, 1)
    tack = pattern_offsets("thumbtack", 2, 2)
    assert (0, 0, 2) in tack and (0, 0, -2) in tack  # the head spans x
    assert (0, 2, 0) in tack and (0, -2, 0) not in tack
    with pytest.raises(ValueError, match="radius"):
        pattern_offsets("star", 3, 6)
    with pytest.raises(ValueError, match="pattern"):
        pattern_offsets("cross", 3, 1)


@pytest.mark.parametrize("pattern", PATTERNS)
def test_synthetic_reference_equals_a_direct_loop(pattern: str) -> None:
    st = synthetic(pattern, 3, 2, size=6, seed=3)
    data = st.make_data(seed=1)
    ref = st.reference(data)["out"]
    a = data["in"].astype(np.float64)
    h = st.origin
    w = st.coefs
    offs = st.meta["offsets"]
    assert all(v != 0 for v in w)
    for z, y, x in itertools.product(range(6), repeat=3):
        want = sum(wi * a[z + h[0] + dz, y + h[1] + dy, x + h[2] + dx] for wi, (dz, dy, dx) in zip(w, offs))
        assert abs(ref[z, y, x] - want) < 1e-5


@pytest.mark.parametrize("name", CSTUNER_STENCILS)
def test_cstuner_stencils_are_well_formed(name: str) -> None:
    st = cstuner_stencil(name, 8)
    assert st.dtype == "float64"
    assert st.flops_per_point > 0
    accs = st.all_accesses()
    assert {a.array for a in accs} <= set(st.inputs)
    for a in accs:
        assert abs(a.dz) <= st.halo[0] and abs(a.dy) <= st.halo[1] and abs(a.dx) <= st.halo[2]
    out = st.reference(st.make_data())
    assert set(out) == {o for o, _ in st.outputs}
    assert all(np.all(np.isfinite(v)) and v.shape == (8, 8, 8) for v in out.values())


def test_cstuner_radii_and_defaults_follow_the_paper() -> None:
    radius = {n: cstuner_stencil(n).radius for n in CSTUNER_STENCILS}
    assert radius == {"j3d7pt": 1, "j3d27pt": 1, "helmholtz": 1, "cheby": 1, "hypterm": 4, "addsgd4": 2,
                      "addsgd6": 3, "rhs4center": 2}
    assert cstuner_stencil("j3d7pt").shape == (512, 512, 512)
    st = cstuner_stencil("j3d7pt", 16)
    assert st.flops_per_point == 13  # 7 multiplies + 6 adds
    assert st.compulsory_bytes() == (18 ** 3 + 16 ** 3) * 8


def test_j3d7pt_reference_by_hand() -> None:
    st = cstuner_stencil("j3d7pt", 4)
    data = st.make_data(seed=5)
    a = data["in"]
    ref = st.reference(data)["out"]
    c = st.coefs
    oz, oy, ox = st.origin
    z, y, x = 1 + oz, 2 + oy, 3 + ox  # interior (1, 2, 3) in padded coordinates
    want = (c[0] * a[z, y, x] + c[1] * a[z - 1, y, x] + c[2] * a[z + 1, y, x] + c[3] * a[z, y - 1, x]
            + c[4] * a[z, y + 1, x] + c[5] * a[z, y, x - 1] + c[6] * a[z, y, x + 1])
    assert ref[1, 2, 3] == pytest.approx(want, rel=1e-14)


def test_flop_count_merges_common_subexpressions() -> None:
    e = Access("a", 0, 0, 1) * Access("b", 0, 0, 1)
    assert count_flops([e + e]) == 2  # one multiply shared, one add


@pytest.mark.parametrize("name", ["hypterm", "addsgd6", "rhs4center"])
def test_reference_at_points_equals_the_full_reference(name: str) -> None:
    st = cstuner_stencil(name, 12)
    data = st.make_data(seed=2)
    full = st.reference(data)
    pts = tuple(np.random.default_rng(0).integers(0, 12, 40) for _ in range(3))
    at = st.reference_at(data, pts)  # type: ignore[arg-type]
    for o in full:
        assert np.array_equal(at[o], full[o][pts])


def test_rows_of_the_interior_start_on_128_byte_boundaries() -> None:
    for st in (cstuner_stencil("hypterm", 20), synthetic("star", 3, 5, size=24), cstuner_stencil("j3d7pt", 16)):
        pitch_bytes = st.padded_shape[2] * st.itemsize
        assert pitch_bytes % 128 == 0
        assert st.x0 >= st.halo[2] and (st.x0 * st.itemsize) % 128 == 0
        assert st.padded_shape[2] >= st.x0 + st.shape[2] + st.halo[2]
