"""Bruel et al.'s weighted normalized sum (ReConFig 2017) and its scenarios.

cost = sum_i w_i * m_i / b_i  /  sum_i w_i, over the metrics of a
configuration (m) and of the default configuration (b), so the default
scores exactly 1 and lower is better.  Metric names follow the original
tuner: ``wct`` (cycles / Fmax), ``lu`` (logic: LUTs), ``pins``, ``regs``
(flip-flops), ``block``, ``ram`` and ``dsp``.

Weights (irrelevant 1, low 2, medium 4, high 8) for area, performance and
perflat are those of github.com/phrb/legup-tuner,
post_place_and_route/py/tuner.py (commit 02d91928) -- the
``legup_tuner_space.json`` we were given holds the LegUp parameters but not
these weights.  That file has no "balanced" weights either; ours (medium
everywhere that matters, pins and block irrelevant as in the other three)
are an assumption, named as such in docs/FLAGS.md.

Mapping to iCE40: Quartus' "block memory bits" has no counterpart that
changes with our options, so ``block`` is the carry-chain cell count
(SB_CARRY); ``ram`` is SB_RAM40_4K blocks, ``dsp`` SB_MAC16 blocks.

Zero baselines: the original adds the bare weight when the default uses
none of a resource, which makes any use of it free (e.g. DSP blocks when
the default maps multipliers to LUTs).  We keep ratio 1 for "still none"
and charge ``1 + m / available`` (the fraction of the device's blocks)
when the configuration uses some.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["METRICS", "SCENARIOS", "weighted_normalized_sum"]

METRICS = ("wct", "lu", "pins", "regs", "block", "ram", "dsp")

SCENARIOS: dict[str, dict[str, float]] = {
    "area": {"wct": 2, "lu": 8, "pins": 1, "regs": 8, "block": 1, "ram": 8, "dsp": 8},
    "performance": {"wct": 8, "lu": 2, "pins": 1, "regs": 4, "block": 1, "ram": 2, "dsp": 2},
    "perflat": {"wct": 8, "lu": 2, "pins": 1, "regs": 8, "block": 1, "ram": 2, "dsp": 2},
    "balanced": {"wct": 4, "lu": 4, "pins": 1, "regs": 4, "block": 1, "ram": 4, "dsp": 4},
}


def weighted_normalized_sum(metrics: Mapping[str, float], baseline: Mapping[str, float],
                            scenario: str | Mapping[str, float],
                            available: Mapping[str, float] | None = None) -> float:
    """The cost of ``metrics`` relative to ``baseline`` (1.0 == the baseline)."""
    if isinstance(scenario, str):
        if scenario not in SCENARIOS:
            raise ValueError(f"scenario={scenario!r}: choose one of {sorted(SCENARIOS)}")
        weights = SCENARIOS[scenario]
    else:
        weights = dict(scenario)
    available = available or {}
    total = 0.0
    for name, w in weights.items():
        if name not in metrics or name not in baseline:
            raise ValueError(f"weighted_normalized_sum: metric {name!r} missing; measure it for both configurations")
        m, b = float(metrics[name]), float(baseline[name])
        if b != 0.0:
            ratio = m / b
        elif m == 0.0:
            ratio = 1.0
        else:
            ratio = 1.0 + m / float(available.get(name) or max(m, 1.0))
        total += w * ratio
    return total / sum(weights.values())
