"""Discover a gcc flag space from gcc itself.

OpenTuner's gcc tuner shipped hand-copied option lists that went stale with
every gcc release.  gcc can describe its own optimisation options:
``gcc -Q --help=optimizers -O2`` lists every ``-f`` optimisation with its
state at that level (``[enabled]``/``[disabled]``, an enumeration
``-fx=[a|b]`` or a range ``-fx=<lo,hi>``), and ``gcc -Q --help=params``
lists ``--param`` knobs with their current value and, for many, their legal
range ``<lo,hi>``.  This module parses that text into a
:class:`apps.flags.FlagSpace`; the parsers take text so they are testable
without the tool.

Options that change the ABI, add instrumentation or need profile data are
left out (:data:`EXCLUDED_FLAG_PREFIXES`); options that only change the
numerical result (``-ffast-math`` family) are deliberately kept: the app's
output check is what rejects them when they break a program.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from apps.flags.space import FlagSpace
from apps.flags.spec import Choice, Flag, IntRange, Switch
from measurement.process import run_command

__all__ = [
    "EXCLUDED_FLAG_PREFIXES",
    "EXCLUDED_PARAM_PREFIXES",
    "UNRANGED_PARAM_PREFIXES",
    "discover_gcc",
    "parse_optimizers",
    "parse_params",
]

#: ABI changes, instrumentation, profile feedback, debugging aids, OpenMP-only
#: parallelisation and security hardening: not what a speed tuner should vary.
EXCLUDED_FLAG_PREFIXES: tuple[str, ...] = (
    "-fexceptions", "-fnon-call-exceptions", "-fhandle-exceptions", "-fdelete-dead-exceptions",
    "-fasynchronous-unwind-tables", "-funwind-tables",
    "-fstack-protector", "-fstack-check", "-fstack-clash-protection", "-fsplit-stack",
    "-fcf-protection", "-fharden", "-ftrivial-auto-var-init", "-flive-patching",
    "-fpack-struct", "-fshort-enums", "-fshort-wchar", "-fpcc-struct-return", "-freg-struct-return",
    "-fleading-underscore", "-fcommon",
    "-fprofile", "-fbranch-probabilities", "-fauto-profile", "-fvpt",
    "-fpatchable-function-entry", "-finstrument", "-fsanitize",
    "-ftree-parallelize-loops", "-fsched-stalled-insns", "-fvar-tracking", "-fverbose-asm",
    "-fsemantic-interposition", "-fsection-anchors", "-fdelete-null-pointer-checks",
    "-fexcess-precision", "-fzero-call-used-regs", "-ftrapv", "-fcx-",
    "-fsched-",  # selective scheduler knobs: huge, rarely matter on x86
    "-fselective-scheduling",
    "-fopt-info", "-fsave-optimization-record",  # reports, not optimisations
)

EXCLUDED_PARAM_PREFIXES: tuple[str, ...] = (
    "asan-", "hwasan-", "tsan-", "lto-", "analyzer-", "graphite-", "profile-",
    "ssp-", "stack-clash-", "use-canonical-types", "parloops-", "ipa-cp-profile",
    "cxx-", "openacc-", "lazy-modules", "logical-op-non-short-circuit",
)

#: params without a printed range that still matter for loops and inlining;
#: they get the range [0, 4 * default] (a value gcc refuses is a FAILED trial).
UNRANGED_PARAM_PREFIXES: tuple[str, ...] = (
    "max-unroll", "max-unrolled", "max-average-unrolled", "max-peel", "max-completely-peel",
    "max-inline-insns", "inline-unit-growth", "early-inlining-insns", "max-variable-expansions",
    "unroll-jam-max-unroll", "vect-max-version", "min-vect-loop-bound", "max-early-inliner",
)

_LINE = re.compile(r"^\s+(-f[\w\-+.]+|--param=[\w\-]+)(=(?:<(-?\d+),(-?\d+)>|\[([^\]]*)\])?)?\s*(.*)$")


def _excluded(name: str, prefixes: Iterable[str]) -> bool:
    return any(name.startswith(p) for p in prefixes)


def _param_name(opt: str) -> str:
    return opt.replace("-", "_").lstrip("_")


def parse_optimizers(text: str, exclude: Sequence[str] = EXCLUDED_FLAG_PREFIXES) -> list[Flag]:
    """Flags from ``gcc -Q --help=optimizers -O<n>`` output.

    ``-fx [enabled|disabled]`` and bare ``-fx`` become three-state switches
    (default / ``-fx`` / ``-fno-x``); ``-fx=[a|b]`` becomes a choice with
    ``None`` (leave it) first; ``-fx=<lo,hi>`` an integer range.
    Options shown as ``[available in C++]`` do not apply to C and are skipped.
    """
    flags: dict[str, Flag] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        opt, eq, lo, hi, enum, rest = m.groups()
        rest = rest.strip()
        if opt.startswith("--param") or "[available" in rest or _excluded(opt, exclude):
            continue
        if opt.startswith("-fno-"):
            continue  # C++-only negative spellings
        if eq is None:
            if rest and rest not in ("[enabled]", "[disabled]"):
                continue  # an alias line such as "-fhandle-exceptions  -fexceptions"
            name = _param_name(opt)
            flags.setdefault(name, Switch(name, on=[opt], off=["-fno-" + opt[2:]], tristate=True))
        elif enum is not None:
            values = [v for v in enum.split("|") if v]
            name = _param_name(opt) + "_choice"
            flags[name] = Choice(name, [None, *values], [opt + "={}"])
        elif lo is not None:
            name = _param_name(opt) + "_value"
            default = int(rest) if re.fullmatch(r"-?\d+", rest) else None
            flags[name] = IntRange(name, int(lo), int(hi), [opt + "={}"], default_value=default,
                                   omit_default=default is not None)
    return list(flags.values())


def parse_params(text: str, exclude: Sequence[str] = EXCLUDED_PARAM_PREFIXES,
                 unranged: Sequence[str] = UNRANGED_PARAM_PREFIXES) -> list[Flag]:
    """``--param`` knobs from ``gcc -Q --help=params`` output.

    Ranged params use the printed range; a few loop/inlining params without a
    printed range (:data:`UNRANGED_PARAM_PREFIXES`) get ``[0, 4 * default]``.
    The current value is the default and renders to nothing, so the default
    configuration is exactly the plain ``-O`` level.
    """
    flags: list[Flag] = []
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m or not m.group(1).startswith("--param="):
            continue
        opt, _eq, lo, hi, enum, rest = m.groups()
        key = opt[len("--param="):]
        rest = rest.strip()
        if _excluded(key, exclude) or enum is not None or not re.fullmatch(r"-?\d+", rest):
            continue
        default = int(rest)
        if lo is not None:
            low, high = int(lo), int(hi)
            if low == high:
                continue
        elif _excluded(key, unranged):
            low, high = 0, max(4 * default, 8)
        else:
            continue
        low, high = min(low, default), max(high, default)  # e.g. -1 meaning "unset"
        name = "param_" + key.replace("-", "_")
        log = low >= 1 and high / low >= 64
        flags.append(IntRange(name, low, high, [f"--param={key}={{}}"], default_value=default,
                              omit_default=True, log=log))
    return flags


def discover_gcc(gcc: str = "gcc", level: str = "-O2", *, params: bool = True,
                 timeout: float = 60.0) -> FlagSpace:
    """Ask ``gcc`` for its optimisation flags (and params) at ``level``."""
    opt = run_command([gcc, "-Q", "--help=optimizers", level], timeout=timeout)
    if not opt.ok:
        raise RuntimeError(f"discover_gcc(gcc={gcc!r}): '{gcc} -Q --help=optimizers' failed: {opt.reason}; "
                           "pass the path of a working gcc")
    flags = parse_optimizers(opt.stdout)
    if params:
        par = run_command([gcc, "-Q", "--help=params", level], timeout=timeout)
        if par.ok:
            flags += parse_params(par.stdout)
    return FlagSpace(flags)
