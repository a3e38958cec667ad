"""gcc flags app: compile/run/verify with typed outcomes, on tiny problem sizes."""

from __future__ import annotations

import shutil

import pytest

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")


@pytest.fixture(scope="module")
def kahan():
    from apps.gcc_flags.evaluator import GccEvaluator

    ev = GccEvaluator("kahan", size=100000, repeats=2)
    yield ev
    ev.close()


def test_default_config_is_plain_O2_and_valid(kahan) -> None:
    cfg = kahan.flags.default_config()
    assert kahan.flags.render(cfg) == ["-O2"]
    res = kahan.evaluate(cfg)
    assert res.state == "OK", res.reason
    assert len(res.times) == 2 and min(res.times) <= res.time <= max(res.times) and res.time > 0


@pytest.mark.parametrize("flag", ["ffast_math", "funsafe_math_optimizations", "ffinite_math_only"])
def test_planted_miscompile_is_invalid(kahan, flag: str) -> None:
    cfg = kahan.flags.default_config() | {flag: "on"}
    res = kahan.evaluate(cfg)
    assert res.state == "INVALID"
    assert "differs from reference" in (res.reason or "")


def test_fast_math_is_fine_where_output_is_stable() -> None:
    from apps.gcc_flags.evaluator import GccEvaluator

    ev = GccEvaluator("matmul", size=32, repeats=1)
    try:
        assert ev.evaluate(ev.flags.default_config() | {"ffast_math": "on", "opt_level": "3"}).state == "OK"
    finally:
        ev.close()


def test_compile_failure_is_failed_with_reason(kahan) -> None:
    res = kahan.run(kahan.compile_flags(["-O2", "-fthis-flag-does-not-exist"]))
    assert res.state == "FAILED"
    assert "compile" in res.reason and "this-flag-does-not-exist" in res.reason


def test_compile_timeout_is_typed(kahan) -> None:
    res = kahan.run(kahan.compile_flags(["-O2"], timeout=0.001))
    assert res.state == "TIMEOUT"


def test_run_timeout_is_typed() -> None:
    from apps.gcc_flags.evaluator import GccEvaluator

    ev = GccEvaluator("sort", size=5000, repeats=1)
    try:
        ev.reference()
        ev.size = 200_000_000  # far more work than the limit allows (allocation alone)
        res = ev.run(ev.compile_flags(["-O0"]), limit=0.2)
        assert res.state in ("TIMEOUT", "FAILED")  # FAILED only if malloc refuses 1.6 GB
        if res.state == "FAILED":
            pytest.skip(f"could not provoke a timeout here: {res.reason}")
    finally:
        ev.close()


def test_app_space_seeds_and_render() -> None:
    from apps.gcc_flags.app import GccFlagsApp

    app = GccFlagsApp(program="kahan", size=1000, repeats=1)
    space = app.space()
    seeds = app.seed_configurations()
    assert [app.render(s) for s in seeds] == [["-O2"], ["-O3"], ["-O1"]]
    assert all(space.is_valid(s) for s in seeds)
    res = app.run_compiled(seeds[1], app.compile(seeds[1]), None)
    assert res.state == "OK" and res.time > 0
    bad = seeds[0] | {"ffast_math": "on"}
    assert app.run_compiled(bad, app.compile(bad), None).state == "INVALID"


def test_list_programs(capsys) -> None:
    from apps.gcc_flags.__main__ import main

    assert main(["--list"]) == 0
    out = capsys.readouterr().out
    assert {"matmul", "stencil3d", "sort", "kahan"} <= {line.split()[0] for line in out.splitlines()}


def test_tune_small_budget_end_to_end(tmp_path) -> None:
    """A real tuning run through the drivers: seeds first, every build checked."""
    from apps.gcc_flags.app import GccFlagsApp
    from ensemble.driver.local import run_app
    from ensemble.registry import create_technique
    from ensemble.settings import RunSettings

    app = GccFlagsApp(program="kahan", size=20000, repeats=1)
    settings = RunSettings(test_limit=6, database=f"sqlite:///{tmp_path / 'g.db'}", seed=2, quiet=True)
    result = run_app(app, settings, technique=create_technique("Random", seed=2))
    assert result.evaluations == 6
    assert result.best_config is not None and app.evaluator.flags.is_valid(result.best_config)
    best = app.evaluator.evaluate(result.best_config)
    assert best.state == "OK"  # the best configuration's output matches -O2
    app.evaluator.close()


def test_ofast_level_rejected_on_kahan_accepted_on_matmul(kahan) -> None:
    from apps.gcc_flags.evaluator import GccEvaluator

    assert kahan.evaluate(kahan.flags.default_config() | {"opt_level": "fast"}).state == "INVALID"
    mm = GccEvaluator("matmul", size=32, repeats=1)
    try:
        assert mm.flags.render(mm.flags.default_config() | {"opt_level": "fast"}) == ["-Ofast"]
        assert mm.evaluate(mm.flags.default_config() | {"opt_level": "fast"}).state == "OK"
    finally:
        mm.close()
