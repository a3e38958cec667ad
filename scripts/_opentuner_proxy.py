"""Technique ``opentuner-0.8.8``: OpenTuner 0.8.8's own search driving our runs, from a subprocess.

Why a subprocess: OpenTuner 0.8.8 needs SQLAlchemy < 1.4 and our core needs
SQLAlchemy 2, so OpenTuner runs under its own interpreter and Python path
(``scripts/_opentuner_proxy_child.py``, which never imports our packages) and
this class, an ordinary :class:`~ensemble.technique.Technique`, relays between
it and the search driver.  Everything else is the run's: the driver, the app,
its compile threads, the database and the trace, so a tuning run with this
technique is measured exactly as one with any of ours, and its wall time
includes OpenTuner's own overhead (its search, its SQLAlchemy database, the
configurations it proposes that the space rejects).  Scripts only: the
installed package does not depend on OpenTuner.

What OpenTuner searches: its default ``--technique`` (AUCBanditMetaTechniqueA:
an AUC bandit over DifferentialEvolutionAlt, UniformGreedyMutation,
NormalGreedyMutation and RandomNelderMead) unless ``technique=`` names another,
through ``TuningRunManager`` (``get_next_desired_result`` / ``report_result``),
with ``--parallelism`` set to the driver's measurement workers, as the replay
harness ``scripts/_bench_search_opentuner.py`` drives it.  Each discrete
parameter is an IntegerParameter over its value indices (ordinal, our index
view); Float / LogFloat are OpenTuner's FloatParameter / LogFloatParameter;
a Permutation is a PermutationParameter of item positions; a parameter with
one value is left out (fixed).

Protocol (line JSON on the child's stdin/stdout, see the child's docstring):
the first line sends the parameters, the seed and the seed configurations;
then each message tells results and asks for up to N configurations, and the
child answers with OpenTuner's desired results as value-index vectors.

Constraints: OpenTuner cannot express our space's constraints.  A proposal
the space rejects (``SearchSpace.is_valid`` false) is answered to OpenTuner
as an ERROR result (time inf) before it is asked for anything else, never
reaches the driver, is not measured and is NOT counted in the budget (the
replay harness and Kernel Tuner do not count them either).  At most
``reject_limit`` (default 100 x budget, as the replay harness) are rejected
in a run; then the technique is done.  Within one ``propose`` call at most
``rejects_per_call`` are rejected while the technique has something in flight;
then it waits for a result before asking OpenTuner again.

Seed configurations: ``seeds=`` (the bench passes the app's baseline) become
OpenTuner's ``--seed-configuration``s: it requests them in its first
generation (the driver, which measures the run's seeds itself, answers them
from that measurement: not counted twice).  Results OpenTuner did not ask for
(a seed the driver measured before OpenTuner asked for it, another
technique's) are given to it as seed results when they arrive; it does not
ask for those again.  On a space as constrained as csTuner's CUDA space
(about 5 valid configurations in a million) the seed is what lets
OpenTuner's mutation arms find valid neighbours at all: without ``seeds=``
the first ``propose`` has nothing to wait for, and on j3d7pt OpenTuner used
up its 4,800 rejections (95 s on the 2-core development machine) before a
first valid configuration; with the baseline as seed, 48 evaluations cost
about 200 rejections (all eight stencils, a stand-in objective).

Failures: a FAILED / INVALID trial is reported as an ERROR result, a TIMEOUT
as TIMEOUT, both with time inf.  Several proposals may be outstanding at once
(``parallelism > 1``): OpenTuner hands out several desired results before
their results come back.

Which interpreter: ``OPENTUNER_PYTHON`` (with ``OPENTUNER_PYTHONPATH`` as the
child's whole PYTHONPATH; ``scripts/gpu_env.sh`` sets both on the GPU
machine from ``.whl/opentuner/``), else the local peer venv
``.bench/opentuner-venv`` (``scripts._peers.peer_python("opentuner")``, made
on first use).  The child is seeded (``random`` and ``numpy.random``) from the
run seed (the technique's ``seed``, else a draw of the driver's generator),
with ``PYTHONHASHSEED=0``; in a run with one worker the same seed gives the
same sequence of configurations (tests/scripts/test_opentuner_proxy.py).
With several workers the order results come back in varies, and with it
OpenTuner's later proposals, as for our own techniques.  The child exits when
its stdin closes (``close()``, ``close_all()``, the technique collected, or
our process dead); a reply slower than ``reply_timeout`` kills it.
"""

from __future__ import annotations

import json
import logging
import math
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ensemble.errors import TechniqueError
from ensemble.space import DiscreteParameter, Float, LogFloat, Permutation
from ensemble.technique import Technique, Trial

__all__ = ["CHILD", "NAME", "OpenTunerProxy", "close_all", "opentuner_python"]

NAME = "opentuner-0.8.8"
CHILD = Path(__file__).resolve().with_name("_opentuner_proxy_child.py")
#: generations without a proposal before OpenTuner counts as finished (its own --bail-threshold)
BAIL_THRESHOLD = 500
FIX = ("on the GPU machine run `. scripts/gpu_env.sh` with the wheels in .whl/opentuner/ (made on the "
       "development machine by scripts/fetch_opentuner_wheels.sh); locally unset OPENTUNER_PYTHON to use "
       ".bench/opentuner-venv (python -m scripts._peers opentuner), or point OPENTUNER_PYTHON (and "
       "OPENTUNER_PYTHONPATH) at a Python with opentuner==0.8.8, SQLAlchemy<1.4, future and numpy")

_log = logging.getLogger("scripts.opentuner_proxy")
#: every proxy not yet collected: close_all() ends their OpenTuner processes
_LIVE: weakref.WeakSet[OpenTunerProxy] = weakref.WeakSet()


def close_all() -> None:
    """End the OpenTuner process of every proxy of this process (the bench calls it after each run).

    Why: a proxy's process also ends when the proxy is garbage-collected, but
    the run's objects hold reference cycles, so without this an idle
    OpenTuner process could outlive its run until the next collection.
    """
    for proxy in list(_LIVE):
        proxy.close()


def opentuner_python(*, create: bool = True) -> tuple[str, str | None]:
    """(interpreter, PYTHONPATH or None) that runs the child.

    ``OPENTUNER_PYTHON`` wins (with ``OPENTUNER_PYTHONPATH``); else the peer
    venv, created when ``create`` (a TechniqueError naming the fix when that fails).
    """
    from scripts._peers import peer_interpreter

    try:
        return peer_interpreter("opentuner", create=create)
    except RuntimeError as exc:
        raise TechniqueError(f"{NAME}: no OpenTuner interpreter (OPENTUNER_PYTHON is unset and the peer venv "
                             f"is unusable: {exc}); {FIX}") from exc


class _Child:
    """The OpenTuner process: one JSON line out, one JSON line back (with a time limit)."""

    def __init__(self, python: str, pythonpath: str | None, timeout: float) -> None:
        self.python, self.pythonpath, self.timeout = python, pythonpath, timeout
        self.tmp = tempfile.mkdtemp(prefix="opentuner-proxy-")   # OpenTuner's opentuner.log lands here
        self.err_path = os.path.join(self.tmp, "stderr.txt")
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
        env["PYTHONHASHSEED"] = "0"
        if pythonpath:
            env["PYTHONPATH"] = pythonpath   # the child's whole path: never ours (SQLAlchemy 2)
        try:
            with open(self.err_path, "wb") as err:
                self.proc = subprocess.Popen([python, str(CHILD)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                             stderr=err, cwd=self.tmp, env=env)
        except OSError as exc:
            shutil.rmtree(self.tmp, ignore_errors=True)
            raise TechniqueError(f"{NAME}: cannot start OPENTUNER_PYTHON={python!r} ({exc}); {FIX}") from exc
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.reader = threading.Thread(target=_read_lines, args=(self.proc.stdout, self.lines), daemon=True,
                                       name="opentuner-proxy-reader")
        self.reader.start()
        self.finalizer = weakref.finalize(self, _shutdown, self.proc, self.tmp)

    def exchange(self, msg: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None
        if not self.finalizer.alive:
            raise TechniqueError(f"{NAME}: its OpenTuner process was closed (close() or close_all()); "
                                 "bind the technique to a run again")
        try:
            self.proc.stdin.write((json.dumps(msg) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass   # it died: the reply read below says so, with its stderr
        try:
            line = self.lines.get(timeout=self.timeout)
        except queue.Empty:
            self.close()
            raise TechniqueError(f"{NAME}: OpenTuner gave no answer in {self.timeout:g} s; its process was "
                                 f"killed.{self.stderr_tail()}") from None
        if line is None:  # its stdout closed: it died (or is dying)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            message = (f"{NAME}: the OpenTuner process (OPENTUNER_PYTHON={self.python}) exited with "
                       f"{self.proc.returncode} before answering.{self.stderr_tail()} If it cannot "
                       f"import OpenTuner: {FIX}")
            self.close()   # later calls then fail at once instead of waiting out the reply timeout
            raise TechniqueError(message)
        reply: dict[str, Any] = json.loads(line)
        if "error" in reply:
            self.close()
            if reply.get("kind") == "import":
                raise TechniqueError(f"OpenTuner 0.8.8 not importable with OPENTUNER_PYTHON={self.python} "
                                     f"(OPENTUNER_PYTHONPATH={self.pythonpath or ''}): {reply['error']}; {FIX}")
            raise TechniqueError(f"{NAME}: OpenTuner failed ({reply.get('kind')}):\n{reply['error']}")
        return reply

    def stderr_tail(self, n: int = 3000) -> str:
        try:
            text = Path(self.err_path).read_text(errors="replace")
        except OSError:
            return ""
        return f"\nits stderr (last {n} characters):\n{text[-n:]}" if text.strip() else ""

    def close(self) -> None:
        self.finalizer()


def _read_lines(stream: Any, out: queue.Queue[bytes | None]) -> None:
    for line in iter(stream.readline, b""):
        out.put(line)
    out.put(None)


def _shutdown(proc: subprocess.Popen[bytes], tmp: str) -> None:
    """Close the child's stdin (it exits), kill it if it does not, remove its folder."""
    try:
        if proc.stdin is not None:
            proc.stdin.close()
    except OSError:
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    shutil.rmtree(tmp, ignore_errors=True)


class OpenTunerProxy(Technique):
    """OpenTuner 0.8.8 (its AUCBanditMetaTechniqueA by default) proposing through a subprocess.

    Options: ``seeds`` (configurations OpenTuner requests first, its
    --seed-configuration), ``technique`` (an OpenTuner technique name;
    default its own default), ``parallelism`` (OpenTuner's --parallelism;
    default the driver's workers), ``reject_limit`` (default 100 x budget),
    ``rejects_per_call`` (default 64), ``reply_timeout`` (seconds, default
    300), ``python`` / ``pythonpath`` (default: see :func:`opentuner_python`).
    """

    name: ClassVar[str] = NAME

    def __init__(self, *, seed: int | None = None, seeds: Sequence[dict[str, Any]] | None = None,
                 technique: str | None = None, parallelism: int | None = None, reject_limit: int | None = None,
                 rejects_per_call: int = 64, reply_timeout: float = 300.0, python: str | None = None,
                 pythonpath: str | None = None) -> None:
        super().__init__(seed=seed)
        self.seeds = [dict(s) for s in seeds or []]
        self.ot_technique = technique
        self.parallelism = parallelism
        self.reject_limit = reject_limit
        self.rejects_per_call = max(1, int(rejects_per_call))
        self.reply_timeout = float(reply_timeout)
        self.python, self.pythonpath = python, pythonpath
        self._child: _Child | None = None
        self._params: list[tuple[Any, str]] = []    # (our parameter, kind) in OpenTuner's order
        self._fixed: dict[str, Any] = {}
        self._waiting: dict[str, list[int]] = {}    # config hash -> OpenTuner desired-result ids handed out
        self._tell: list[dict[str, Any]] = []
        self._inject: list[dict[str, Any]] = []
        self._stalled = False
        self._done = False
        self.info: dict[str, Any] = {}
        #: proposals handed to the driver / rejected by the space / results OpenTuner did not ask for
        self.proposed = 0
        self.rejected = 0
        self.injected = 0

    # -- set-up ----------------------------------------------------------------------
    def bind(self, space: Any, *, budget: int | None, rng: np.random.Generator) -> None:
        super().bind(space, budget=budget, rng=rng)
        if self._child is not None:
            self._child.close()
        self._params, self._fixed = _mapping(space)
        if self.reject_limit is None:
            self.reject_limit = 100 * (budget or 100)
        run_seed = self.seed if self.seed is not None else int(rng.integers(2 ** 31))
        python, pythonpath = (self.python, self.pythonpath) if self.python else opentuner_python()
        seeds = []
        for s in self.seeds:
            if not space.is_valid(s):
                raise TechniqueError(f"{NAME}: seed configuration {s} is not a valid point of the space")
            seeds.append(self._to_x(s))
        self._child = _Child(python, pythonpath, self.reply_timeout)
        _LIVE.add(self)
        self.info = self._child.exchange({"params": [self._describe(p, k) for p, k in self._params],
                                          "seed": run_seed, "parallelism": self._parallelism(),
                                          "technique": self.ot_technique, "seeds": seeds})
        self.info.pop("ok", None)
        _log.info("%s: OpenTuner %s (%s) under Python %s", NAME, self.info.get("opentuner"),
                  self.info.get("technique"), self.info.get("python"))

    def close(self) -> None:
        """End the OpenTuner process now (it also ends when this object is collected)."""
        if self._child is not None:
            self._child.close()

    @staticmethod
    def _describe(p: Any, kind: str) -> dict[str, Any]:
        if kind == "index":
            return {"name": p.name, "kind": kind, "high": int(p.cardinality) - 1}
        if kind == "perm":
            return {"name": p.name, "kind": kind, "size": len(p.items)}
        return {"name": p.name, "kind": kind, "low": float(p.low), "high": float(p.high)}

    def _parallelism(self) -> int:
        return max(1, int(self.parallelism or self.workers or 1))

    # -- value <-> OpenTuner vector ----------------------------------------------------
    def _to_x(self, config: dict[str, Any]) -> list[Any]:
        out: list[Any] = []
        for p, kind in self._params:
            v = config[p.name]
            if kind == "index":
                out.append(int(p.index_of(v)))
            elif kind == "perm":
                out.append(p._positions(v))
            else:
                out.append(float(v))
        return out

    def _to_config(self, x: Sequence[Any]) -> dict[str, Any] | None:
        """Our configuration for OpenTuner's vector ``x``; None when a value is out of its range."""
        if len(x) != len(self._params):
            return None
        config = dict(self._fixed)
        for (p, kind), v in zip(self._params, x):
            if kind == "index":
                if not 0 <= int(v) < p.cardinality:
                    return None
                config[p.name] = p.value_at(int(v))
            elif kind == "perm":
                if sorted(v) != list(range(len(p.items))):
                    return None
                config[p.name] = [p.items[int(i)] for i in v]
            else:
                config[p.name] = min(max(float(v), p.low), p.high)
        return {n: config[n] for n in self._need_space().names}   # the space's order

    # -- ask / tell --------------------------------------------------------------------
    def _outstanding(self) -> int:
        return sum(len(v) for v in self._waiting.values())

    def _exchange(self, ask: int, wait: bool) -> dict[str, Any]:
        assert self._child is not None
        msg = {"tell": self._tell, "inject": self._inject, "ask": ask, "wait": wait,
               "idle": 0 if wait else BAIL_THRESHOLD, "parallelism": self._parallelism()}
        self._tell, self._inject = [], []
        return self._child.exchange(msg)

    def propose(self, n: int) -> list[dict[str, Any]]:
        """Up to ``n`` of OpenTuner's desired results that the space accepts.

        Rejected ones are told to OpenTuner as errors (with the next message,
        before it is asked anything else) and cost no budget.  Returns ``[]``
        while OpenTuner waits for results (then it is asked again once one arrives).
        """
        space = self._need_space()
        if self._child is None:
            raise TechniqueError(f"{NAME}: propose() before bind()")
        if self._done or n <= 0 or (self._stalled and self._outstanding() > 0):
            return []
        self._stalled = False
        out: list[dict[str, Any]] = []
        rejects = 0
        assert self.reject_limit is not None
        while len(out) < n and not self._done:
            wait = bool(out) or self._outstanding() > 0
            props = self._exchange(n - len(out), wait)["proposals"]
            if not props:
                if wait:
                    self._stalled = True          # OpenTuner waits for a result
                else:
                    self._done = True
                    _log.warning("%s: OpenTuner proposed nothing in %d generations; done", NAME, BAIL_THRESHOLD)
                break
            for item in props:
                config = self._to_config(item["x"])
                if config is None or not space.is_valid(config):
                    self._tell.append({"id": item["id"], "state": "ERROR", "time": None})
                    self.rejected += 1
                    rejects += 1
                    continue
                self._waiting.setdefault(space.config_hash(config), []).append(int(item["id"]))
                out.append(config)
            if self.rejected >= self.reject_limit:
                self._done = True
                _log.warning("%s: %d proposals outside the space's constraints (the limit); done", NAME,
                             self.rejected)
            elif rejects >= self.rejects_per_call and (out or self._outstanding() > 0):
                self._stalled = True              # ask OpenTuner again once a result has come back
                break
        if self._tell:
            self._exchange(0, True)               # the rejected ones are answered now
        self.proposed += len(out)
        return out

    @staticmethod
    def _outcome(trial: Trial) -> dict[str, Any]:
        state = str(getattr(trial.state, "value", trial.state))
        if state == "OK" and math.isfinite(float(trial.value)):
            return {"state": "OK", "time": float(trial.value)}
        return {"state": "TIMEOUT" if state == "TIMEOUT" else "ERROR", "time": None}

    def observe(self, trial: Trial) -> None:
        """A result of our proposal (measured, or a duplicate answered by the driver): to OpenTuner."""
        self._stalled = False
        for dr in self._waiting.pop(trial.config_hash, []):
            self._tell.append({"id": dr, **self._outcome(trial)})

    def observe_foreign(self, trial: Trial) -> None:
        """Another request's result: answers our waiting proposals of that configuration, else given as a seed."""
        self._stalled = False
        if trial.config_hash in self._waiting:
            self.observe(trial)
            return
        if trial.duplicate or self.space is None:
            return
        try:
            if not self.space.is_valid(trial.config):
                return
            x = self._to_x(trial.config)
        except Exception:  # noqa: BLE001 - a configuration of another space (resume): not OpenTuner's
            return
        self._inject.append({"x": x, **self._outcome(trial)})
        self.injected += 1

    def restore(self, trials: Sequence[Trial]) -> None:
        """Resume: every stored result is given to the new OpenTuner as a seed result."""
        for t in trials:
            self.observe_foreign(t)

    @property
    def done(self) -> bool:
        return self._done

    def state_dict(self) -> dict[str, Any]:
        return {**self.info, "proposed": self.proposed, "rejected": self.rejected, "injected": self.injected,
                "reject_limit": self.reject_limit}


def _mapping(space: Any) -> tuple[list[tuple[Any, str]], dict[str, Any]]:
    """(parameter, kind) for OpenTuner, and the one-value parameters left out."""
    params: list[tuple[Any, str]] = []
    fixed: dict[str, Any] = {}
    for p in space.params:
        if isinstance(p, DiscreteParameter) and p.cardinality == 1:
            fixed[p.name] = p.value_at(0)
        elif isinstance(p, Permutation):
            params.append((p, "perm"))
        elif isinstance(p, DiscreteParameter):
            params.append((p, "index"))
        elif isinstance(p, LogFloat):
            params.append((p, "logfloat"))
        elif isinstance(p, Float):
            if p.low == p.high:
                fixed[p.name] = p.low
            else:
                params.append((p, "float"))
        else:
            raise TechniqueError(f"{NAME}: parameter {p.name!r} ({type(p).__name__}) has no OpenTuner mapping")
    if not params:
        raise TechniqueError(f"{NAME}: every parameter of the space has one value; nothing to tune")
    return params, fixed
