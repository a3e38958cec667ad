"""csTuner parameter grouping: pairwise coefficients of variation and the deque algorithm.

Sun et al., "csTuner: Scalable Auto-tuning Framework for Complex Stencil
Computation on GPUs", IEEE CLUSTER 2021, group parameters that interact so a
GA can tune each small group on its own.  Two parameters p and q interact when
the best value of p moves as q varies: for every value of q (the other
parameters fixed at the best sample) we take the value of p with the best
objective, map it to a numeric scale and compute the coefficient of variation
(std / mean) over q's values.  A CV of 0 means the best p does not depend on
q.  Numeric parameters use a log2 scale (tuning parameters such as block sizes
grow geometrically); everything else uses its 1-based index.

The ordered pairs, sorted by CV, go into a double-ended queue.  Our reading of
the paper's Algorithm 1 (we could not consult the full text; see docs/MPI.md):
pairs are popped from the strong end while their CV exceeds ``threshold`` and
join or open groups of at most ``max_group`` parameters; once the strong end
holds only weak pairs, the parameters still ungrouped are popped from the weak
end and each becomes a group of its own, the most independent first.

Everything here is pure: domains are ``{name: [values...]}`` and a dataset is
a sequence of ``(config, value)`` pairs with lower values better.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = [
    "deque_grouping",
    "group_parameters",
    "interaction_cvs",
    "pair_cv",
    "probe_configs",
    "value_scale",
]

Record = tuple[Mapping[str, Any], float]


def value_scale(values: Sequence[Any]) -> dict[Any, float]:
    """Map each value of a parameter to a positive number for CV computation.

    Positive numbers map to ``1 + log2(v / min)`` so the smallest value is 1
    (a CV needs a mean away from zero); other domains (negative ranges, enums,
    booleans) map to their 1-based index.
    """
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    if numeric and values and min(values) > 0:
        lo = float(min(values))
        return {v: 1.0 + math.log2(float(v) / lo) for v in values}
    return {_key(v): float(i + 1) for i, v in enumerate(values)}


def _key(value: Any) -> Any:
    """Hashable form of a parameter value (permutations are lists)."""
    return tuple(value) if isinstance(value, list) else value


def _scaled(scale: Mapping[Any, float], value: Any) -> float | None:
    """The scale of ``value``; off-grid numbers (e.g. sampled floats) take their nearest grid value."""
    x = scale.get(_key(value))
    if x is not None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return x
    numeric = [k for k in scale if isinstance(k, (int, float)) and not isinstance(k, bool)]
    if not numeric:
        return None
    return scale[min(numeric, key=lambda k: abs(k - value))]


def _cv(xs: Sequence[float]) -> float:
    """Coefficient of variation (population std / |mean|); 0 for constant data."""
    if len(xs) < 2:
        return 0.0
    mean = sum(xs) / len(xs)
    var = sum((x - mean) ** 2 for x in xs) / len(xs)
    if var <= 0.0:
        return 0.0
    if mean == 0.0:
        return math.inf
    return math.sqrt(var) / abs(mean)


def pair_cv(
    records: Sequence[Record],
    p: str,
    q: str,
    scale_p: Mapping[Any, float],
    base: Mapping[str, Any] | None = None,
) -> float:
    """CV of the best value of ``p`` across the values of ``q``.

    With ``base``, only records whose other parameters equal the base are
    used (the paper's "others fixed at the best sample"); if that leaves fewer
    than two values of q, all records are used instead (a random dataset).
    """
    anchor = _scaled(scale_p, base[p]) if base is not None and p in base else None

    def tie_rank(cfg: Mapping[str, Any]) -> tuple[float, float]:
        # Equal objective values: prefer the p value nearest the base, so ties do
        # not read as interaction (CV stays 0 when p's best does not move).
        x = _scaled(scale_p, cfg[p]) or 0.0
        return (abs(x - anchor) if anchor is not None else 0.0, x)

    def buckets(rows: Sequence[Record]) -> dict[Any, Record]:
        best: dict[Any, Record] = {}
        for cfg, val in rows:
            if not math.isfinite(val) or _scaled(scale_p, cfg[p]) is None:
                continue
            k = _key(cfg[q])
            old = best.get(k)
            if old is None or val < old[1] or (val == old[1] and tie_rank(cfg) < tie_rank(old[0])):
                best[k] = (cfg, val)
        return best

    rows = list(records)
    if base is not None:
        others = [n for n in base if n not in (p, q)]
        fixed = [r for r in rows if all(_key(r[0].get(n)) == _key(base[n]) for n in others)]
        chosen = buckets(fixed)
        if len(chosen) < 2:
            chosen = buckets(rows)
    else:
        chosen = buckets(rows)
    return _cv([_scaled(scale_p, cfg[p]) or 0.0 for cfg, _ in chosen.values()])


def _spread(values: Sequence[Any], k: int | None, keep: Any = None) -> list[Any]:
    """At most ``k`` values spread evenly over the domain (ends included), plus ``keep``."""
    if k is None or len(values) <= k:
        return list(values)
    idx = {round(i * (len(values) - 1) / (k - 1)) for i in range(k)}
    if keep is not None and keep in values:
        idx.add(list(values).index(keep))
    return [values[i] for i in sorted(idx)]


def probe_configs(
    domains: Mapping[str, Sequence[Any]],
    base: Mapping[str, Any],
    p: str,
    q: str,
    max_values: int | None = None,
) -> list[dict[str, Any]]:
    """The grid of p x q values with every other parameter at ``base``.

    ``max_values`` caps how many values of each parameter are probed (the
    base's own value is always among them), which bounds the cost of grouping
    at about ``pairs * (max_values + 1)**2`` evaluations.
    """
    out = []
    for vp in _spread(list(domains[p]), max_values, base.get(p)):
        for vq in _spread(list(domains[q]), max_values, base.get(q)):
            cfg = dict(base)
            cfg[p] = vp
            cfg[q] = vq
            out.append(cfg)
    return out


def interaction_cvs(
    domains: Mapping[str, Sequence[Any]],
    records: Sequence[Record],
    base: Mapping[str, Any] | None = None,
) -> dict[tuple[str, str], float]:
    """CV for every ordered pair (p, q), p != q, computed from ``records``."""
    scales = {n: value_scale(list(v)) for n, v in domains.items()}
    names = list(domains)
    return {
        (p, q): pair_cv(records, p, q, scales[p], base)
        for p in names
        for q in names
        if p != q
    }


def deque_grouping(
    cvs: Mapping[tuple[str, str], float],
    names: Sequence[str],
    *,
    threshold: float = 0.1,
    max_group: int = 4,
) -> list[list[str]]:
    """Group parameters from their pairwise CVs with a double-ended queue.

    Returns groups (lists of names) in tuning order: interacting groups in the
    order they were formed (strongest first), then singletons, most
    independent first.  Every name appears in exactly one group.
    """
    if max_group < 1:
        raise ValueError(f"max_group={max_group} must be >= 1; use 1 to tune every parameter alone")
    order = {n: i for i, n in enumerate(names)}
    dq = collections.deque(
        sorted(cvs.items(), key=lambda kv: (-kv[1], order[kv[0][0]], order[kv[0][1]]))
    )
    group_of: dict[str, int] = {}
    groups: list[list[str]] = []
    while dq and dq[0][1] > threshold and max_group >= 2:
        (p, q), _ = dq.popleft()
        gp, gq = group_of.get(p), group_of.get(q)
        if gp is None and gq is None:
            groups.append([p, q])
            group_of[p] = group_of[q] = len(groups) - 1
        elif gp is not None and gq is None and len(groups[gp]) < max_group:
            groups[gp].append(q)
            group_of[q] = gp
        elif gq is not None and gp is None and len(groups[gq]) < max_group:
            groups[gq].append(p)
            group_of[p] = gq
        elif (gp is not None and gq is not None and gp != gq
              and len(groups[gp]) + len(groups[gq]) <= max_group):
            groups[gp].extend(groups[gq])
            for n in groups[gq]:
                group_of[n] = gp
            groups[gq] = []
    groups = [g for g in groups if g]
    singles: list[list[str]] = []
    while dq:
        (p, q), _ = dq.pop()
        for n in (p, q):
            if n not in group_of:
                group_of[n] = -1
                singles.append([n])
    singles.extend([n] for n in names if n not in group_of)
    return groups + singles


def group_parameters(
    domains: Mapping[str, Sequence[Any]],
    evaluate: Callable[[dict[str, Any]], float],
    base: Mapping[str, Any],
    *,
    max_values: int | None = 8,
    threshold: float = 0.1,
    max_group: int = 4,
    is_valid: Callable[[dict[str, Any]], bool] | None = None,
) -> tuple[list[list[str]], dict[tuple[str, str], float], int]:
    """Probe every pair around ``base``, then group: (groups, cvs, evaluations).

    A convenience for synchronous objectives (tests, replays); the CsTuner
    technique issues the same probes through propose/observe instead.
    """
    seen: dict[tuple[tuple[str, Any], ...], float] = {}
    names = list(domains)
    for i, p in enumerate(names):
        for q in names[i + 1:]:
            for cfg in probe_configs(domains, base, p, q, max_values):
                key = tuple(sorted((k, _key(v)) for k, v in cfg.items()))
                if key in seen or (is_valid is not None and not is_valid(cfg)):
                    continue
                seen[key] = float(evaluate(cfg))
    records = [(dict(k), v) for k, v in seen.items()]
    cvs = interaction_cvs(domains, records, base)
    return deque_grouping(cvs, names, threshold=threshold, max_group=max_group), cvs, len(seen)
