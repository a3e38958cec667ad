"""The eight stencils of csTuner's Table III, written from their mathematics.

Why these: csTuner (Sun et al., CLUSTER 2021) evaluates on j3d7pt, j3d27pt,
helmholtz, cheby, hypterm, addsgd4, addsgd6 and rhs4center, the set used by
Artemis (Rawat et al., IPDPS 2019).  They span low-order Jacobi smoothers,
variable-coefficient multigrid operators (HPGMG: helmholtz, cheby), a
compressible Navier-Stokes flux (ExpCNS hypterm, 8th-order differences) and
the seismic code SW4 (supergrid dissipation addsgd4/6; the 4th-order elastic
operator rhs4center).  Each formula below was written here from the
underlying discretisation, not copied from those codes: structure, arrays,
radius and order follow the originals; literal coefficients are ours where the
originals' are specific to their meshes.  Double precision throughout.

Default grid sizes follow the paper's setup (512^3 for the Jacobi and HPGMG
kernels, 320^3 for the multi-array ExpCNS and SW4 kernels); every size is
configurable.
"""

from __future__ import annotations

from collections.abc import Callable

from apps.stencil.expr import Expr, total
from apps.stencil.spec import Accessor, Stencil, make_stencil

__all__ = ["CSTUNER_STENCILS", "cstuner_stencil"]

# 8th-order central first-difference weights (hypterm): f' ~ sum_m c_m (f[+m] - f[-m]).
_C8 = (0.8, -0.2, 4.0 / 105.0, -1.0 / 280.0)
# 4th-order central first difference: (f[-2] - 8 f[-1] + 8 f[+1] - f[+2]) / 12.
_D4 = ((-2, 1.0 / 12.0), (-1, -8.0 / 12.0), (1, 8.0 / 12.0), (2, -1.0 / 12.0))


def _off(axis: int, d: int) -> tuple[int, int, int]:
    o = [0, 0, 0]
    o[axis] = d
    return o[0], o[1], o[2]


def _j3d7pt(g: Accessor) -> Expr:
    # Jacobi 7-point: centre and six face neighbours, one weight each.
    pts = [(0, 0, 0), (-1, 0, 0), (1, 0, 0), (0, -1, 0), (0, 1, 0), (0, 0, -1), (0, 0, 1)]
    return total([g.w(i) * g("in", *p) for i, p in enumerate(pts)])


def _j3d27pt(g: Accessor) -> Expr:
    pts = [(z, y, x) for z in (-1, 0, 1) for y in (-1, 0, 1) for x in (-1, 0, 1)]
    return total([g.w(i) * g("in", *p) for i, p in enumerate(pts)])


def _helm_op(g: Accessor, x: str) -> Expr:
    """HPGMG's variable-coefficient operator a*alpha*x - b*h2inv*div(beta grad x)."""
    flux = []
    for axis, beta in ((2, "beta_i"), (1, "beta_j"), (0, "beta_k")):
        up = g(beta, *_off(axis, 1)) * (g(x, *_off(axis, 1)) - g(x))
        down = g(beta) * (g(x) - g(x, *_off(axis, -1)))
        flux.append(up - down)
    return g.w(0) * g("alpha") * g(x) - g.w(1) * g.w(2) * total(flux)


def _helmholtz(g: Accessor) -> Expr:
    return _helm_op(g, "x")


def _cheby(g: Accessor) -> Expr:
    # Chebyshev smoother step: x + c1 (x - x_prev) + c2 Dinv (rhs - A x).
    return g("x") + g.w(3) * (g("x") - g("xp")) + g.w(4) * g("dinv") * (g("rhs") - _helm_op(g, "x"))


def _d8(g: Accessor, axis: int, f: Callable[[tuple[int, int, int]], Expr]) -> Expr:
    return total([c * (f(_off(axis, m)) - f(_off(axis, -m))) for m, c in enumerate(_C8, start=1)])


_MOM = ("cons_imx", "cons_imy", "cons_imz")
_VEL = ("q_u", "q_v", "q_w")


def _hyp_flux(g: Accessor, out: int, d: int, o: tuple[int, int, int]) -> Expr:
    """Flux of conserved quantity ``out`` in direction ``d`` (0 = x) at offset ``o``."""
    v = g(_VEL[d], *o)
    if out == 0:
        return g(_MOM[d], *o)
    if out in (1, 2, 3):
        f = g(_MOM[out - 1], *o) * v
        return f + g("q_p", *o) if out - 1 == d else f
    return (g("cons_e", *o) + g("q_p", *o)) * v


def _hypterm(out: int) -> Callable[[Accessor], Expr]:
    def f(g: Accessor) -> Expr:
        terms = []
        for d, axis in enumerate((2, 1, 0)):  # x, y, z directions
            def fn(o: tuple[int, int, int], d: int = d) -> Expr:
                return _hyp_flux(g, out, d, o)
            terms.append(g.w(d) * _d8(g, axis, fn))
        return -total(terms)

    return f


def _addsgd(order: int, c: int) -> Callable[[Accessor], Expr]:
    """SW4 supergrid dissipation of ``order`` 4 or 6 on component ``c``.

    up -= beta/rho * sum_axes (product of the other axes' stretching) *
    sum_p s_p rho[p] dc[p] co[p] * Delta^k (u - um)[p], with the 2nd (order 4) or
    3rd (order 6) undivided difference, which makes radius 2 or 3.
    """
    names = ("strz", "stry", "strx"), ("dcz", "dcy", "dcx"), ("coz", "coy", "cox")

    def f(g: Accessor) -> Expr:
        u, um = f"u{c}", f"um{c}"

        def v(o: tuple[int, int, int]) -> Expr:
            return g(u, *o) - g(um, *o)

        per_axis = []
        for axis in (2, 1, 0):
            strs, dcs, cos = names
            if order == 4:
                def inner(p: int, axis: int = axis) -> Expr:
                    return v(_off(axis, p + 1)) - 2.0 * v(_off(axis, p)) + v(_off(axis, p - 1))
                outer: tuple[tuple[int, float], ...] = ((1, 1.0), (0, -2.0), (-1, 1.0))
            else:
                def inner(p: int, axis: int = axis) -> Expr:
                    return (v(_off(axis, p + 1)) - 3.0 * v(_off(axis, p)) + 3.0 * v(_off(axis, p - 1))
                            - v(_off(axis, p - 2)))
                outer = ((2, 1.0), (1, -3.0), (0, 3.0), (-1, -1.0))
            s = total([w * g("rho", *_off(axis, p)) * g.line(dcs[axis], axis, p) * g.line(cos[axis], axis, p)
                       * inner(p) for p, w in outer])
            others = [a for a in (0, 1, 2) if a != axis]
            per_axis.append(g.line(strs[others[0]], others[0]) * g.line(strs[others[1]], others[1]) * s)
        return g(f"up{c}") - g.w(0) / g("rho") * total(per_axis)

    return f


def _rhs4center(c: int) -> Callable[[Accessor], Expr]:
    """Component ``c`` of SW4's 4th-order elastic operator, interior form.

    Normal second derivatives use the compact 4th-order variable-coefficient
    scheme (coefficients mu or 2mu+lambda times the grid stretching at five
    points, weights 3/4 and 1/6 as in Sjogreen & Petersson, J. Sci. Comput.
    2012); the mixed derivatives d/da(lambda d u_b/db) + d/db(mu d u_b/da) use
    4th-order central first differences.  Scaled by cof = w(0) / rho.
    """
    strs = ("strz", "stry", "strx")
    comp_axis = (2, 1, 0)[c]  # component 0 = x displacement, along axis 2

    def f(g: Accessor) -> Expr:
        def coef_at(axis: int, p: int) -> Expr:
            o = _off(axis, p)
            base = 2.0 * g("mu", *o) + g("la", *o) if axis == comp_axis else g("mu", *o)
            return base * g.line(strs[axis], axis, p)

        u = f"u{c}"
        terms = []
        for axis in (2, 1, 0):
            m = {p: coef_at(axis, p) for p in (-2, -1, 0, 1, 2)}
            mu1 = m[-1] - 0.75 * (m[0] + m[-2])
            mu2 = m[-2] + m[1] + 3.0 * (m[0] + m[-1])
            mu3 = m[-1] + m[2] + 3.0 * (m[1] + m[0])
            mu4 = m[1] - 0.75 * (m[0] + m[2])
            uc = g(u)
            lap = (mu1 * (g(u, *_off(axis, -2)) - uc) + mu2 * (g(u, *_off(axis, -1)) - uc)
                   + mu3 * (g(u, *_off(axis, 1)) - uc) + mu4 * (g(u, *_off(axis, 2)) - uc))
            terms.append((1.0 / 6.0) * g.line(strs[axis], axis, 0) * lap)
        for b, ub in ((2, "u0"), (1, "u1"), (0, "u2")):
            if b == comp_axis:
                continue
            a = comp_axis
            # d/da (lambda d u_b / db)
            t1 = total([wa * g("la", *_off(a, pa)) * total([wb * g(ub, *_add(_off(a, pa), _off(b, pb)))
                                                              for pb, wb in _D4]) for pa, wa in _D4])
            # d/db (mu d u_b / da)
            t2 = total([wb * g("mu", *_off(b, pb)) * total([wa * g(ub, *_add(_off(b, pb), _off(a, pa)))
                                                              for pa, wa in _D4]) for pb, wb in _D4])
            terms.append(g.line(strs[a], a, 0) * g.line(strs[b], b, 0) * (t1 + t2))
        return g.w(0) / g("rho") * total(terms)

    return f


def _add(a: tuple[int, int, int], b: tuple[int, int, int]) -> tuple[int, int, int]:
    return a[0] + b[0], a[1] + b[1], a[2] + b[2]


def _build(name: str, size: int | None) -> Stencil:
    n = size
    if name == "j3d7pt":
        return make_stencil(name, ["in"], {"out": _j3d7pt},
                            coefs=[0.4, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1], shape=(n or 512,) * 3)
    if name == "j3d27pt":
        coefs = [0.2 if (i == 13) else 0.8 / 26 * (1 + 0.01 * i) for i in range(27)]
        return make_stencil(name, ["in"], {"out": _j3d27pt}, coefs=coefs, shape=(n or 512,) * 3)
    if name == "helmholtz":
        return make_stencil(name, ["x", "alpha", "beta_i", "beta_j", "beta_k"], {"out": _helmholtz},
                            coefs=[0.9, 0.1, 0.25], shape=(n or 512,) * 3)
    if name == "cheby":
        return make_stencil(name, ["x", "xp", "rhs", "dinv", "alpha", "beta_i", "beta_j", "beta_k"],
                            {"out": _cheby}, coefs=[0.9, 0.1, 0.25, 0.3, 0.2], shape=(n or 512,) * 3)
    if name == "hypterm":
        ins = ["cons_imx", "cons_imy", "cons_imz", "cons_e", "q_u", "q_v", "q_w", "q_p"]
        return make_stencil(name, ins, {f"flux{i}": _hypterm(i) for i in range(5)},
                            coefs=[0.5, 0.4, 0.3], shape=(n or 320,) * 3)
    if name in ("addsgd4", "addsgd6"):
        order = 4 if name == "addsgd4" else 6
        ins = ["u0", "u1", "u2", "um0", "um1", "um2", "up0", "up1", "up2", "rho"]
        ls = [(s, a) for a, s in ((2, "strx"), (1, "stry"), (0, "strz"))]
        ls += [(s, a) for a, s in ((2, "dcx"), (1, "dcy"), (0, "dcz"))]
        ls += [(s, a) for a, s in ((2, "cox"), (1, "coy"), (0, "coz"))]
        return make_stencil(name, ins, {f"upn{c}": _addsgd(order, c) for c in range(3)},
                            coefs=[0.05], shape=(n or 320,) * 3, line_arrays=ls)
    if name == "rhs4center":
        ins = ["u0", "u1", "u2", "mu", "la", "rho"]
        ls = [("strx", 2), ("stry", 1), ("strz", 0)]
        return make_stencil(name, ins, {f"uacc{c}": _rhs4center(c) for c in range(3)},
                            coefs=[0.1], shape=(n or 320,) * 3, line_arrays=ls)
    raise ValueError(f"stencil={name!r} is unknown; use one of {CSTUNER_STENCILS}")


CSTUNER_STENCILS = ("j3d7pt", "j3d27pt", "helmholtz", "cheby", "hypterm", "addsgd4", "addsgd6", "rhs4center")


def cstuner_stencil(name: str, size: int | None = None) -> Stencil:
    """One of the eight csTuner stencils; ``size`` overrides the default cube edge."""
    return _build(name, size)
