"""Candidates for the default ensemble, scored by scripts/bench_search.py.

Why: the default's arms must be chosen by measurement (issue 3), and every
candidate measured must be recorded (docs/TECHNIQUES.md, "Choosing the
default"; docs/bench_search_results.md).  This script registers the
candidate compositions as configured variants (``ensemble.registry.register``)
and runs ``scripts.bench_search.main`` on them, so they are scored exactly
like the registered techniques (same methodology, budgets, seeds).

    python -m scripts.bench_default_candidates --repeats 10 --peers '' --jobs 2 \\
        --techniques default,DiscreteGA,DGA+DE --markdown /tmp/candidates.md

Any option of scripts.bench_search is accepted; ``--list`` prints the
candidate names.  The bandit candidates use the default's C = 0.1, W = 500.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, ClassVar

from ensemble import registry
from techniques.bandit import AUCBandit

__all__ = ["CANDIDATES", "ModelFirst", "ModelMajor", "register_candidates"]


class ModelFirst(AUCBandit):
    """Candidate: the first arm (a model) proposes until it stalls; then the AUC bandit over all arms.

    Why: on the replay spaces BayesOpt alone (0.472 at 25 seeds) beat the
    bandit that contains it (0.423): sharing the budget from the start costs
    the GP its early, well-placed evaluations.  "Stalls" = ``patience``
    consecutive proposals of the model without an improvement of the best
    (default: a tenth of the budget, at least 10), or the model is done
    (retired on a cheap objective, or exhausted).  A candidate, not the default.
    """

    name: ClassVar[str] = "ModelFirst"

    def __init__(self, *, seed: int | None = None, patience: int | None = None, **options: Any) -> None:
        super().__init__(seed=seed, **options)
        self.patience = patience
        self._since = 0  # the model's proposals since its last credit
        self._stalled = False

    def _pick(self, blocked: set[int]) -> int | None:
        limit = self.patience or max(10, (self.budget or 100) // 10)
        if not self._stalled and 0 not in blocked and self._since < limit:
            return 0
        self._stalled = True
        return super()._pick(blocked)

    def _on_result(self, arm: int, credit: bool) -> None:
        super()._on_result(arm, credit)
        if arm == 0 and not self._stalled:
            self._since = 0 if credit else self._since + 1


class ModelMajor(AUCBandit):
    """Candidate: the first arm (a model) proposes all but a fixed share of the trials; the bandit the rest.

    Why: BayesOpt alone beat the bandit containing it on four of five replay
    spaces, but the bandit won on pnpoly, where the population arms find the
    optimum the GP misses.  Here the model keeps ``1 - share`` of the
    proposals (it still learns from every result) and the AUC bandit over
    the other arms gets ``share``; once the model is done (retired or
    exhausted) the bandit gets everything.  A candidate, not the default.
    """

    name: ClassVar[str] = "ModelMajor"

    def __init__(self, *, seed: int | None = None, share: float = 0.25, **options: Any) -> None:
        super().__init__(seed=seed, **options)
        self.share = float(share)
        self._asked = 0  # proposals so far
        self._others = 0  # of which by the other arms

    def _pick(self, blocked: set[int]) -> int | None:
        self._asked += 1
        if 0 not in blocked and self._others >= self.share * self._asked:
            return 0
        i = super()._pick(blocked | {0})
        if i is None:
            return None if 0 in blocked else 0
        self._others += 1
        return i


#: name -> (registered base technique, options)
CANDIDATES: dict[str, tuple[str | type, dict[str, object]]] = {
    "DiscreteGA-generational": ("DiscreteGA", {"survivors": "generational"}),
    "DiscreteGA-plus": ("DiscreteGA", {"survivors": "plus"}),
    "DiscreteGA-crowding": ("DiscreteGA", {"survivors": "crowding"}),
    "DGA+DE": ("AUCBandit", {"arms": ["DiscreteGA", "DifferentialEvolution"], "c": 0.1}),
    "DGA+DE+GA": ("AUCBandit", {"arms": ["DiscreteGA", "DifferentialEvolution", "GA"], "c": 0.1}),
    "DGA+BayesOpt": ("AUCBandit", {"arms": ["DiscreteGA", "BayesOpt"], "c": 0.1}),
    "DE+GA+BayesOpt": ("AUCBandit", {"arms": ["DifferentialEvolution", "GA", "BayesOpt"], "c": 0.1}),
    "DGA+DE+BayesOpt": ("AUCBandit", {"arms": ["DiscreteGA", "DifferentialEvolution", "BayesOpt"], "c": 0.1}),
    "ModelFirst": (ModelFirst, {"arms": ["BayesOpt", "DifferentialEvolution", "GA"], "c": 0.1}),
    "ModelMajor25": (ModelMajor, {"arms": ["BayesOpt", "DifferentialEvolution", "GA"], "c": 0.1, "share": 0.25}),
    "ModelMajor10": (ModelMajor, {"arms": ["BayesOpt", "DifferentialEvolution", "GA"], "c": 0.1, "share": 0.10}),
    "BayesOpt-xi0.1": ("BayesOpt", {"xi": 0.1}),
    "BayesOpt-init10": ("BayesOpt", {"initial": 10}),
    "BayesOpt-observed": ("BayesOpt", {"incumbent": "observed"}),
    "BayesOpt-init40": ("BayesOpt", {"initial": 40}),
}


def register_candidates() -> None:
    """Register every candidate not registered yet (idempotent)."""
    taken = set(registry.technique_names())
    for name, (base, options) in CANDIDATES.items():
        if name not in taken:
            registry.register(name, base, **options)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if "--list" in args:
        print("\n".join(CANDIDATES))
        return 0
    register_candidates()
    from scripts import bench_search

    return bench_search.main(args)


if __name__ == "__main__":
    raise SystemExit(main())
