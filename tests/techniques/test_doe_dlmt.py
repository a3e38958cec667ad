"""The DLMT technique: fixed levels respected, resume mid-step, bandit arm, report, bad input."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from ensemble.errors import TechniqueError
from ensemble.space import Boolean, Enum, Integer, PowerOfTwo, SearchSpace
from ensemble.technique import Trial
from techniques.bandit import AUCBandit
from techniques.doe import DLMT
from tests.techniques.driven import run_technique


def space() -> SearchSpace:
    s = SearchSpace().add(PowerOfTwo("wx", 1, 64), PowerOfTwo("wy", 1, 64), Integer("unroll", 1, 8),
                          Enum("memory", ["global", "local", "image"]), Boolean("vector"), Integer("noise", 0, 5))
    s.require("wx * wy <= 256")
    return s


def objective(c: dict[str, Any]) -> float:
    return (abs(math.log2(c["wx"]) - 3) + 0.8 * abs(math.log2(c["wy"]) - 2) + 0.3 * (c["unroll"] - 5) ** 2
            + {"global": 2.0, "local": 0.0, "image": 1.0}[c["memory"]] + (0.0 if c["vector"] else 0.5))


@pytest.mark.parametrize("rest", ["sample", "neighborhood", "model"])
def test_fixed_levels_are_respected_by_every_later_proposal(rest: str) -> None:
    """A level once fixed is in every later proposal; with the default rest="neighborhood" until it is released.

    Release (rest="neighborhood" / "widen") happens only once the sub-space
    of those levels is exhausted (tested below); ``tech.fixed`` then tells the
    levels still fixed, and a released level is never fixed again at another value.
    """
    s = space()
    tech = DLMT(steps=4, rest=rest)
    tech.bind(s, budget=120, rng=np.random.default_rng(5))
    fixed_seen: dict[str, Any] = {}
    seen: dict[str, float] = {}
    ever: dict[str, Any] = {}
    while not tech.done and len(seen) < 120:
        configs = tech.propose(3)
        if not configs:
            assert tech.done, "DLMT waits only while results are outstanding"
            break
        now = dict(tech.fixed)
        if rest == "sample":
            assert now.items() >= fixed_seen.items(), "levels are only added"
        for name, value in now.items():
            assert ever.setdefault(name, value) == value, f"{name} fixed again at another level"
        for c in configs:
            assert s.is_valid(c)
            for name, value in (fixed_seen if rest == "sample" else now).items():
                assert c[name] == value, f"{name} was fixed at {value} but {c[name]} was proposed"
        for c in configs:
            h = s.config_hash(c)
            dup = h in seen
            seen[h] = objective(c)
            tech.observe(Trial(config=c, config_hash=h, value=seen[h], state="OK", technique="dlmt", duplicate=dup))
        fixed_seen = dict(tech.fixed)
    assert tech.done or (len(seen) == 120 and tech.propose(1) == [] and tech.done), "done at the budget"
    assert ever, "a clear objective: some factor must have been fixed"
    steps_fixing = [st for st in tech.steps if st.get("fixed")]
    assert steps_fixing and all(set(st["fixed"]) <= set(ever) for st in steps_fixing)


def _drive(tech: DLMT, s: SearchSpace, stop_after: int | None, history: list[Trial] | None = None) -> list[Trial]:
    """Harness loop; stops (a 'kill') after ``stop_after`` unique evaluations, with one result in flight lost."""
    trials = list(history or [])
    seen = {t.config_hash: t.value for t in trials}
    while not tech.done:
        configs = tech.propose(1)
        if not configs:
            break
        c = configs[0]
        h = s.config_hash(c)
        if stop_after is not None and len(seen) >= stop_after:
            break  # killed: this proposal was never measured
        dup = h in seen
        seen[h] = objective(c)
        t = Trial(config=c, config_hash=h, value=seen[h], state="OK", technique="dlmt", duplicate=dup)
        tech.observe(t)
        trials.append(t)
    return trials


def test_resume_after_a_kill_mid_step_continues_the_step_without_re_measuring() -> None:
    s = space()
    full = DLMT(seed=None)
    full.bind(s, budget=100, rng=np.random.default_rng(21))
    reference = _drive(full, s, None)
    first_design = full.steps[0]["design_size"]
    kill_at = first_design + 1 + 3  # step 1's design and predicted point, then 3 points of step 2's design
    assert full.steps[1].get("design_size", 0) > 3

    before = DLMT()
    before.bind(s, budget=100, rng=np.random.default_rng(21))
    history = _drive(before, s, kill_at)
    assert len(history) == kill_at
    step_at_kill = len(before.steps)

    resumed = DLMT()
    resumed.bind(s, budget=100, rng=np.random.default_rng(21))   # the driver hands the same seeded generator
    resumed.restore(history)
    next_config = resumed.propose(1)[0]
    assert len(resumed.steps) == step_at_kill, "the resumed run must be in the step that was interrupted"
    measured = {t.config_hash for t in history}
    h = s.config_hash(next_config)
    assert h not in measured, "a configuration measured before the kill is not proposed again"
    first = Trial(config=next_config, config_hash=h, value=objective(next_config), state="OK", technique="dlmt")
    resumed.observe(first)
    after = [first] + _drive(resumed, s, None, history=history + [first])[len(history) + 1:]
    assert not measured & {t.config_hash for t in after}
    assert [t.config_hash for t in history + after] == [t.config_hash for t in reference]


def test_works_as_an_arm_of_the_auc_bandit() -> None:
    """An exploring bandit (c=1) over DLMT and Random: DLMT's points come in design order, then it is done.

    With OpenTuner's default c=0.05 the AUC credit decides alone, and a DLMT
    arm whose design points improve the best rarely is asked seldom; that is the
    bandit's choice, not a DLMT rule (docs/DOE.md).
    """
    s = space()
    dlmt = DLMT(steps=2, rest="stop")  # as an arm: done after its steps, the bandit spends the rest
    bandit = AUCBandit(arms=[dlmt, "Random"], c=1.0)
    log = run_technique(bandit, s, objective, budget=150, seed=4)
    assert all(s.is_valid(c) for c in log.proposals)
    assert dlmt.done, "DLMT reports done when its steps are finished"
    assert log.unique == 150, "the bandit goes on with its other arms"
    own = [s.config_hash(t.config) for t in log.trials if t.technique == "dlmt" and not t.duplicate]
    design = [s.config_hash(r["config"]) for r in dlmt.steps[0]["design"]]
    assert own[: len(design)] == design


def test_state_dict_carries_the_report_files() -> None:
    s = space()
    tech = DLMT()
    run_technique(tech, s, objective, budget=80, seed=2)
    state = tech.state_dict()
    files = state["report_files"]
    assert "dlmt.md" in files
    md = files["dlmt.md"]
    assert "## Step 1" in md and "ANOVA" in md and "Pr(>F)" in md and "Fixed" in md
    assert any(name.endswith(".svg") and text.startswith("<svg") for name, text in files.items())
    import json

    json.dumps(state)  # JSON-able for run_state (values are finite here)


def test_the_budget_left_after_the_steps_is_spent_in_the_last_sub_space() -> None:
    """rest="sample": the whole budget is used, every extra point keeps the fixed levels."""
    s = space()
    tech = DLMT(steps=1, rest="sample")
    log = run_technique(tech, s, objective, budget=90, seed=3)
    assert tech.fixed and tech.rest_log is not None and tech.rest_log["measured"] > 0
    last = [c for c in s.enumerate_valid() if all(c[n] == v for n, v in tech.fixed.items())]
    measured = {s.config_hash(c) for c in log.proposals}
    assert log.unique == 90 or all(s.config_hash(c) in measured for c in last), "budget left and points left"
    tail = log.proposals[-tech.rest_log["measured"]:]
    assert all(c[n] == v for c in tail for n, v in tech.fixed.items())
    assert "After the steps" in tech.state_dict()["report_files"]["dlmt.md"]
    stop = DLMT(steps=1, rest="stop")
    assert run_technique(stop, s, objective, budget=90, seed=3).unique < 90, "the paper's behaviour: stop"


def test_log_and_box_cox_transforms_are_recorded_per_step() -> None:
    s = space()
    for transform, text in (("log", "log"), ("boxcox", "Box-Cox lambda")):
        tech = DLMT(steps=2, transform=transform, rest="stop")
        run_technique(tech, s, lambda c: 1.0 + objective(c), budget=60, seed=2)
        assert any(text in str(st.get("transform", "")) for st in tech.steps)


def test_user_formula_is_used_for_the_first_design() -> None:
    s = space()
    tech = DLMT(terms="time ~ wx + I(1/wx) + unroll + I(unroll**2) + C(memory)")
    run_technique(tech, s, objective, budget=60, seed=1)
    assert tech.steps[0]["model"].startswith("time ~ wx + I(1/wx)")


# -- bad input --------------------------------------------------------------------------------------

def test_budget_smaller_than_the_first_design_is_refused_with_the_fix() -> None:
    with pytest.raises(TechniqueError, match="--test-limit to at least"):
        DLMT().bind(space(), budget=5, rng=np.random.default_rng(0))
    with pytest.raises(TechniqueError, match="design_size"):
        DLMT(design_size=40).bind(space(), budget=30, rng=np.random.default_rng(0))


def test_bad_options_name_the_argument() -> None:
    with pytest.raises(TechniqueError, match="significance"):
        DLMT(significance=1.5)
    with pytest.raises(TechniqueError, match="steps"):
        DLMT(steps=0)
    with pytest.raises(TechniqueError, match="transform"):
        DLMT(transform="sqrt")
    with pytest.raises(TechniqueError, match="scale='ln'"):
        DLMT(scale="ln")
    with pytest.raises(TechniqueError, match="automatic terms only"):
        DLMT(scale="log", terms="time ~ a")
    with pytest.raises(TechniqueError, match="rest"):
        DLMT(rest="more")
    with pytest.raises(TechniqueError, match="names no factor"):
        DLMT(terms="y ~ nothere").bind(space(), budget=50, rng=np.random.default_rng(0))


def test_a_factor_with_one_level_is_left_out() -> None:
    s = SearchSpace().add(Integer("a", 0, 6), Integer("one", 4, 4), Enum("k", ["x", "y"]))
    tech = DLMT()
    log = run_technique(tech, s, lambda c: (c["a"] - 2) ** 2 + (c["k"] == "y"), budget=40, seed=0)
    assert "one" not in tech.steps[0]["free"]
    assert all(s.is_valid(c) for c in log.proposals)


def test_categorical_with_more_levels_than_the_budget_is_dropped_from_the_model() -> None:
    s = SearchSpace().add(Integer("a", 0, 9), Integer("b", 0, 9), Enum("many", [f"v{i}" for i in range(40)]))
    tech = DLMT(steps=1)
    log = run_technique(tech, s, lambda c: (c["a"] - 3) ** 2 + c["b"], budget=20, seed=0)
    assert tech.steps[0]["dropped_categorical"] == ["many"]
    assert all(s.is_valid(c) for c in log.proposals)
    assert "many" not in tech.fixed


def test_singular_design_drops_aliased_terms_and_reports_them() -> None:
    s = SearchSpace().add(Integer("a", 0, 6), Integer("b", 0, 6), Integer("c", 0, 6))
    s.require("a == b")
    tech = DLMT(terms="quadratic")
    log = run_technique(tech, s, lambda c: (c["a"] - 2) ** 2 + c["c"], budget=40, seed=0)
    assert "b" in tech.steps[0]["aliased"]
    assert all(s.is_valid(c) for c in log.proposals)
    assert "aliased" in tech.state_dict()["report_files"]["dlmt.md"]


def test_valid_set_smaller_than_the_model_is_searched_without_error() -> None:
    """Singular for every design: 3 valid points, quadratic model of 2 factors (6 coefficients)."""
    s = SearchSpace().add(Integer("a", 0, 4), Integer("b", 0, 4))
    s.require("a == b and a <= 2")
    tech = DLMT(terms="quadratic")
    log = run_technique(tech, s, lambda c: (c["a"] - 1) ** 2 + 1.0, budget=20, seed=0)
    assert all(s.is_valid(c) for c in log.proposals)
    assert log.unique == 3 and tech.done, "every valid point measured, then done"
    assert log.trace[-1][1] == 1.0


class _Killed(BaseException):
    """Stands for kill -9 in the middle of a measurement (not an Exception: the driver cannot catch it)."""


def test_resume_through_the_driver_measures_only_the_rest_of_the_step(tmp_path: Any) -> None:
    import ensemble
    from ensemble.storage import Storage

    s = SearchSpace().add(Integer("a", 0, 10), PowerOfTwo("b", 1, 64), Enum("k", ["x", "y", "z"]), Integer("c", 0, 5))
    calls = {"n": 0, "kill_after": 8}

    def f(c: dict[str, Any]) -> float:
        calls["n"] += 1
        if calls["kill_after"] and calls["n"] > calls["kill_after"]:
            raise _Killed()
        return (c["a"] - 3) ** 2 + abs(c["b"] - 8) / 8 + (c["k"] == "y") + 1.0 + 0.01 * c["c"]

    kw = {"space": s, "technique": "dlmt", "seed": 3, "quiet": True, "run_name": "r", "test_limit": 60}
    with pytest.raises(_Killed):
        ensemble.tune(f, database=f"sqlite:///{tmp_path}/killed.db", **kw)
    calls.update(n=0, kill_after=0)
    # the 'killed' worker is this live process, so resume hands its RUNNING request back only once the
    # heartbeat is heartbeat_timeout old: 1 s here instead of the default 30 s of waiting
    ensemble.tune(f, database=f"sqlite:///{tmp_path}/killed.db", resume=True, heartbeat_timeout=1.0, **kw)
    resumed_measured = calls["n"]
    ensemble.tune(f, database=f"sqlite:///{tmp_path}/whole.db", **kw)

    def measured(db: str) -> list[str]:
        with Storage(f"sqlite:///{tmp_path}/{db}") as st:
            run = st.get_run("r")
            assert run is not None
            rows = sorted(st.trials(run.id), key=lambda r: r.request_id)
            return [r.config_hash for r in rows if not r.duplicate and str(r.state) == "OK"]

    killed, whole = measured("killed.db"), measured("whole.db")
    assert len(killed) == len(set(killed)), "nothing measured twice"
    assert resumed_measured == len(whole) - 8, "the resumed run measured only what the kill left"
    assert killed == whole, "the same design, in the same order, as an uninterrupted run"


# -- the options of step 8 and after the steps (levels, reuse, rest) ----------------------------------

def small_space() -> SearchSpace:
    """216 points: small enough that the last sub-space runs out within the budget."""
    return SearchSpace().add(Integer("a", 0, 5), Integer("b", 0, 5), Enum("k", ["x", "y", "z"]), Boolean("v"))


def noisy(c: dict[str, Any]) -> float:
    """Clear main effects (a, b, k) plus a deterministic ripple the linear model cannot follow.

    The ripple makes the model's predicted best measure worse than a design
    point now and then, which is the case ``levels="checked"`` is for.
    """
    ripple = ((c["a"] * 7 + c["b"] * 13 + "xyz".index(c["k"]) * 5 + int(c["v"]) * 3) % 5) * 1.5
    return 1.0 + 2 * (c["a"] - 4) ** 2 + 1.5 * (c["b"] - 1) ** 2 + 4.0 * (c["k"] == "y") + ripple


def _own_loop(tech: DLMT, s: SearchSpace, f: Any, budget: int, seed: int,
              on_propose: Any = None) -> list[tuple[dict[str, Any], float]]:
    """Ask/tell until DLMT is done, with no cap at the budget (so DLMT's own budget rule is what is tested).

    ``on_propose(tech, measured_before)`` runs after every ``propose`` call,
    with everything measured before that call.  Returns (config, value) in
    proposal order; a proposal of a known point fails the test.
    """
    tech.bind(s, budget=budget, rng=np.random.default_rng(seed))
    measured: list[tuple[dict[str, Any], float]] = []
    seen: set[str] = set()
    for _ in range(10 * budget):
        if tech.done:
            break
        configs = tech.propose(4)
        if on_propose is not None:
            on_propose(tech, list(measured))
        if not configs:
            break
        for c in configs:
            h = s.config_hash(c)
            assert h not in seen, f"{c} proposed a second time"
            assert s.is_valid(c), f"invalid proposal {c}"
            seen.add(h)
            measured.append((c, f(c)))
            tech.observe(Trial(config=c, config_hash=h, value=measured[-1][1], state="OK", technique="dlmt"))
    assert tech.done
    assert len(measured) <= budget, f"{len(measured)} evaluations for a budget of {budget}"
    return measured


def _matches(c: dict[str, Any], fixed: dict[str, Any]) -> bool:
    return all(c[n] == v for n, v in fixed.items())


def test_checked_levels_fix_the_better_measured_point_and_stay_fixed() -> None:
    """levels="checked": the prediction's levels when it measured best in the sub-space, else the best point's."""
    overruled = 0
    for seed in range(4):
        s = small_space()
        tech = DLMT(steps=3, levels="checked", rest="sample")  # "sample": no level released after the steps
        checked: set[int] = set()
        fixed_since: list[tuple[int, dict[str, Any]]] = []  # (proposals measured before, levels fixed)

        def check(t: DLMT, before: list[tuple[dict[str, Any], float]], checked: set[int] = checked,
                  fixed_since: list[tuple[int, dict[str, Any]]] = fixed_since) -> None:
            nonlocal overruled
            for st in t.steps:
                if "predicted_measured" not in st or st["step"] in checked:
                    continue
                checked.add(st["step"])
                inside = [(c, v) for c, v in before if _matches(c, st["fixed_before"])]
                best = min(v for _, v in inside)
                predicted = st["predicted_config"]
                if st["predicted_measured"] <= best:
                    assert st["fixed"] == {n: predicted[n] for n in st["fixed"]}
                    assert "levels_from" not in st
                else:
                    overruled += 1
                    assert "levels_from" in st
                    assert any(v == best and _matches(c, st["fixed"]) for c, v in inside), \
                        "the levels fixed are those of the best measured point of the sub-space"
                fixed_since.append((len(before), dict(t.fixed)))

        measured = _own_loop(tech, s, noisy, 80, seed, check)
        assert fixed_since, "a clear objective: some factor is fixed"
        for start, fixed in fixed_since:
            assert all(_matches(c, fixed) for c, _ in measured[start:]), "a later proposal left a fixed level"
    assert overruled, "the ripple must overrule the prediction at least once in these seeds"


def test_reuse_puts_earlier_runs_in_the_design_and_never_re_measures() -> None:
    """reuse=True: earlier runs of the sub-space are rows of the next design, measured once, counted once."""
    reusing = 0
    for seed in range(3):
        s = small_space()
        tech = DLMT(steps=3, reuse=True)
        measured = _own_loop(tech, s, noisy, 80, seed)   # no proposal twice: asserted in the loop
        order = {s.config_hash(c): i for i, (c, _) in enumerate(measured)}
        for st in tech.steps:
            if not st.get("reused"):
                continue
            reusing += 1
            rows = [s.config_hash(r["config"]) for r in st["design"]]
            assert len(rows) == st["design_size"] == len(set(rows))
            new = rows[st["reused"]:]
            first_new = min(order[h] for h in new)
            old = [h for h in rows if order[h] < first_new]
            assert sorted(old) == sorted(rows[: st["reused"]]), "the reused rows are exactly the earlier runs"
            assert all(_matches(r["config"], st["fixed_before"]) for r in st["design"]), "reused rows lie in the sub-space"
            assert [r["value"] for r in st["design"][: st["reused"]]] == [measured[order[h]][1] for h in rows[: st["reused"]]]
    assert reusing, "some step must reuse earlier runs in these seeds"


def _levels(tech: DLMT) -> list[dict[str, Any]]:
    """The fixed levels of each sub-space, from the whole space (index 0) to the last."""
    out = [{}]
    for st in tech.steps:
        if st.get("fixed"):
            out.append({**out[-1], **st["fixed"]})
    return out


@pytest.mark.parametrize("rest", ["widen", "neighborhood", "model"])
def test_rest_widen_and_neighborhood_release_levels_only_when_the_sub_space_is_exhausted(rest: str) -> None:
    released = 0
    for seed in range(3):
        s = small_space()
        tech = DLMT(steps=3, rest=rest)
        measured = _own_loop(tech, s, noisy, 80, seed)   # valid, never twice, within the budget: in the loop
        assert len(measured) == 80, "the budget is spent: released levels give room"
        subs = _levels(tech)
        assert tech.rest_log is not None
        start = len(measured) - tech.rest_log["measured"]
        released = max(released, tech.rest_log["released_steps"])
        points = [{s.config_hash(c) for c in s.enumerate_valid() if _matches(c, fixed)} for fixed in subs]
        done: set[str] = {s.config_hash(c) for c, _ in measured[:start]}
        depth = len(subs) - 1
        for c, _ in measured[start:]:
            level = max(i for i, fixed in enumerate(subs) if _matches(c, fixed))
            assert level <= depth, "levels once released are not fixed again"
            if level < depth:
                assert points[level + 1] <= done, "levels released while their sub-space had unmeasured points"
                depth = level
            done.add(s.config_hash(c))
        assert tech.fixed == subs[depth], "tech.fixed tells the levels still fixed"
    assert released >= 1, "the small space must exhaust the last sub-space in these seeds"


def test_neighborhood_starts_next_to_the_best_measured_point() -> None:
    """rest="neighborhood": the first point after the steps is one level away from the best of the sub-space."""
    next_to_best = 0
    for seed in range(3):
        s = space()
        tech = DLMT(steps=2, rest="neighborhood")
        measured = _own_loop(tech, s, objective, 70, seed)
        assert tech.rest_log is not None and tech.rest_log["measured"] > 0
        start = len(measured) - tech.rest_log["measured"]
        first = measured[start][0]
        subs = _levels(tech)
        fixed = subs[max(i for i, f in enumerate(subs) if _matches(first, f))]  # its sub-space (levels released?)
        best = min((t for t in measured[:start] if _matches(t[0], fixed)), key=lambda t: t[1])[0]
        before = {s.config_hash(c) for c, _ in measured[:start]}
        around = [c for c in _neighbours(s, best) if _matches(c, fixed) and s.is_valid(c)
                  and s.config_hash(c) not in before]
        if around:
            next_to_best += 1
            assert first in around
    assert next_to_best, "some seed must have unmeasured neighbours of its best point"


def test_model_rest_picks_where_a_gaussian_process_expects_improvement() -> None:
    """rest="model": the picks after the steps are better, on average, than uniform picks ("widen").

    Same seeds, same steps (the rest phase draws nothing before the steps
    end), both release levels once a sub-space is exhausted, so the two runs
    differ only in how the budget left is spent.  The gap is not the same in
    every seed: over seeds 0-15 (checked 2026-11-27) the model's picks were
    better in 14 of 16 and their mean was 0.76 of the uniform picks' (per
    seed 0.35-1.08), so a window of four other seeds can miss 0.8; seeds 0-3
    (0.59) are the first four, not chosen.
    """
    model_mean, sample_mean = [], []
    for seed in range(4):
        runs = {}
        for rest in ("model", "widen"):
            tech = DLMT(steps=2, rest=rest)
            measured = _own_loop(tech, space(), objective, 60, seed)
            assert tech.rest_log is not None and tech.rest_log["measured"] > 3
            assert tech.rest_log["mode"] == ("model" if rest == "model" else "sample")
            runs[rest] = measured[len(measured) - tech.rest_log["measured"]:]
        model_mean.append(np.mean([v for _, v in runs["model"]]))
        sample_mean.append(np.mean([v for _, v in runs["widen"]]))
    assert np.mean(model_mean) < 0.8 * np.mean(sample_mean), (model_mean, sample_mean)


@pytest.mark.parametrize("feasibility", [None, "forest"])
def test_model_rest_with_failures_runs_with_or_without_a_failure_classifier(feasibility: str | None) -> None:
    """rest="model" after failed runs: EI x P(success) with a classifier, EI alone with feasibility=None."""
    s = space()

    def failing(c: dict[str, Any]) -> float:
        return math.inf if c["unroll"] >= 7 else objective(c)

    tech = DLMT(steps=2, rest="model", feasibility=feasibility)
    measured = _own_loop(tech, s, failing, 60, 2)
    assert len(measured) == 60 and tech.rest_log is not None and tech.rest_log["mode"] == "model"
    assert any(not math.isfinite(v) for _, v in measured), "the case needs failures before the rest phase"


def _neighbours(s: SearchSpace, c: dict[str, Any]) -> list[dict[str, Any]]:
    """One level away in one parameter (any other level of a non-numeric Enum)."""
    out = []
    for p in s.params:
        values = list(p.values())
        if p.kind == "Enum" and not all(isinstance(v, (int, float)) for v in values):
            out += [{**c, p.name: v} for v in values if v != c[p.name]]
            continue
        i = values.index(c[p.name])
        out += [{**c, p.name: values[j]} for j in (i - 1, i + 1) if 0 <= j < len(values)]
    return out


@pytest.mark.parametrize("options", [{"levels": "checked", "reuse": True, "rest": "neighborhood"},
                                     {"rest": "widen"}, {"rest": "model"}])
def test_resume_with_the_options_replays_the_same_run(options: dict[str, Any]) -> None:
    """A kill in the rest phase: the resumed run proposes what the uninterrupted one did, nothing twice."""
    s = space()
    full = DLMT(**options)
    full.bind(s, budget=80, rng=np.random.default_rng(8))
    reference = _drive(full, s, None)
    assert full.rest_log is not None and full.rest_log["measured"] > 4
    kill_at = len(reference) - full.rest_log["measured"] // 2
    before = DLMT(**options)
    before.bind(s, budget=80, rng=np.random.default_rng(8))
    history = _drive(before, s, kill_at)
    resumed = DLMT(**options)
    resumed.bind(s, budget=80, rng=np.random.default_rng(8))
    resumed.restore(history)
    after = _drive(resumed, s, None, history=history)[len(history):]
    assert not {t.config_hash for t in history} & {t.config_hash for t in after}
    assert [t.config_hash for t in history + after] == [t.config_hash for t in reference]


def test_bad_values_of_the_step_8_options_name_the_argument() -> None:
    with pytest.raises(TechniqueError, match="levels='best'.*'checked'.*'predicted'"):
        DLMT(levels="best")
    with pytest.raises(TechniqueError, match="reuse='yes'.*True"):
        DLMT(reuse="yes")
    with pytest.raises(TechniqueError, match="rest='more'.*'widen'.*'neighborhood'.*'model'.*'stop'"):
        DLMT(rest="more")


def _interacting(c: dict[str, Any]) -> float:
    """wx and wy act through their product (threads per block), the rest additively."""
    return (abs(math.log2(c["wx"] * c["wy"]) - 5) * (1.0 + 0.3 * math.log2(c["wx"]))
            + 0.3 * (c["unroll"] - 5) ** 2 + (0.0 if c["vector"] else 0.5))


def test_interactions_option_adds_products_of_significant_numeric_factors_only() -> None:
    """interactions="significant": steps 6-8 fit a:b for pairs of significant numeric factors, never others."""
    s = space()
    for seed in range(3):
        tech = DLMT(steps=3, rest="stop", interactions="significant")
        log = run_technique(tech, s, _interacting, budget=80, seed=seed)
        assert log.trials and all(s.is_valid(t.config) for t in log.trials)
        for st in tech.steps:
            added = (st.get("interactions") or {}).get("added", [])
            for term in added:
                a, b = term.split(":")
                assert {a, b} <= set(st["significant_factors"]) and "memory" not in (a, b)
                assert term in st["prediction_model"]
        if any((st.get("interactions") or {}).get("added") for st in tech.steps):
            break
    else:
        pytest.fail("wx and wy interact: some step should have fitted their product")
    # off by default: the paper's additive model
    plain = DLMT(steps=3, rest="stop")
    run_technique(plain, s, _interacting, budget=80, seed=seed)
    assert not any("interactions" in st or ":" in st.get("prediction_model", "") for st in plain.steps)
    with pytest.raises(TechniqueError, match="interactions="):
        DLMT(interactions="all")
