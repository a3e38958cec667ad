"""The nvcc / ptxas / nvlink flag space of Bruel et al. (CCPE 2017), for CUDA 13.

Starting point: ``../shared/data/param_spaces/nvcc_opentuner_space.json``
(from github.com/phrb/gpu-autotuning).  Changes for current toolkits:

* ``--gpu-architecture``: the 2016 list (sm_20..sm_35) is gone from nvcc 13
  (``nvcc --list-gpu-arch`` starts at compute_75).  For the runtime objective
  the choices are the architectures this nvcc lists that run on the target
  GPU (detected, :mod:`apps.nvcc_flags.gpu`): native SASS (sm_90 on
  H100/H200) first, the arch-specific ``sm_90a``, PTX only (``compute_90``,
  JIT at load) and every older SASS+PTX target (sm_89 .. sm_75 with nvcc 13,
  JIT-compiled PTX on sm_90).  The compile-only objective fixes the target
  arch (ptxas metrics of different ISAs are not comparable).
* ptxas ``--def-load-cache`` and ``--def-store-cache`` (-dlcm/-dscm),
  ``--allow-expensive-optimizations``, ``-O0..3`` and ``--maxrregcount``
  (24..255: ptxas raises anything lower to 24 for sm_80 and sm_90; was 16..63).
* nvcc fast-math family: ``--use_fast_math`` or, exclusively, the separate
  ``--ftz``/``--prec-div``/``--prec-sqrt``/``--fmad`` (a constraint: with
  ``--use_fast_math`` they stay at their defaults), plus
  ``-extra-device-vectorization`` and ``-restrict``.
* relocatable device code; ``-dlto`` and nvlink ``--preserve-relocs`` only
  with it (constraints).  ``-dlto`` is probed by a real build because some
  CUDA installs lack the device LTO linker library.
* kept from the original though mostly inert on 64-bit hosts:
  ``--no-align-double``.

Every flag was checked against nvcc 13.0 by compiling (docs/FLAGS.md).
"""

from __future__ import annotations

import functools
import os
import tempfile

from apps.flags.space import FlagSpace
from apps.flags.spec import Choice, IntRange, Switch
from apps.nvcc_flags.gpu import (
    arch_choices_for,
    capability_of,
    parse_gpu_codes,
    parse_virtual_archs,
)
from measurement.process import run_command

__all__ = ["arch_choices", "dlto_links", "nvcc_flag_space", "supported_archs", "supported_codes"]

_TRUE_FALSE = [None, "true", "false"]


@functools.lru_cache(maxsize=8)
def supported_archs(nvcc: str = "nvcc") -> tuple[str, ...]:
    """``compute_XX`` names from ``nvcc --list-gpu-arch`` (empty if nvcc is missing)."""
    out = run_command([nvcc, "--list-gpu-arch"], timeout=60)
    return tuple(parse_virtual_archs(out.stdout)) if out.ok else ()


@functools.lru_cache(maxsize=8)
def supported_codes(nvcc: str = "nvcc") -> tuple[str, ...]:
    """``sm_XX`` names from ``nvcc --list-gpu-code`` (empty if nvcc is missing or too old to list them)."""
    out = run_command([nvcc, "--list-gpu-code"], timeout=60)
    return tuple(parse_gpu_codes(out.stdout)) if out.ok else ()


def arch_choices(target: str, nvcc: str = "nvcc") -> list[str]:
    """Architectures this nvcc supports whose code runs on ``target`` (e.g. "sm_90"), native first."""
    return arch_choices_for(capability_of(target), supported_codes(nvcc), supported_archs(nvcc))


@functools.lru_cache(maxsize=8)
def dlto_links(nvcc: str = "nvcc", arch: str = "sm_90") -> bool:
    """Whether ``-rdc=true -dlto`` compiles *and links* here (needs nvJitLink/libnvvm)."""
    with tempfile.TemporaryDirectory(prefix="nvcc-probe-") as tmp:
        src = os.path.join(tmp, "p.cu")
        with open(src, "w") as f:
            f.write("__global__ void k(float *x) { x[threadIdx.x] += 1.0f; }\nint main() { return 0; }\n")
        out = run_command([nvcc, f"-arch={arch}", "-rdc=true", "-dlto", src, "-o", os.path.join(tmp, "p")],
                          timeout=120)
        return out.ok


def nvcc_flag_space(*, objective: str = "runtime", target: str = "sm_90", nvcc: str = "nvcc",
                    with_dlto: bool | None = None) -> FlagSpace:
    """The tuned flags for ``objective``.

    "runtime" builds executables: it adds the architecture choice and the
    link/host flags (``--preserve-relocs``, ``-dlto`` when it links here,
    ``--no-align-double``).  "compile" builds device code only (``-cubin``,
    fast enough for CI) and leaves out what only acts at link time or on the
    host.  ``with_dlto`` overrides the probe.
    """
    if objective not in ("runtime", "compile"):
        raise ValueError(f"objective={objective!r}: use 'runtime' or 'compile'")
    fs = FlagSpace()
    if objective == "runtime":
        fs.add(Choice("gpu_architecture", arch_choices(target, nvcc), ["--gpu-architecture={}"]))
    fs.add(Switch("relocatable_device_code", on=["--relocatable-device-code=true"]))
    if objective == "runtime":  # an nvlink option: inert in a device-only (-cubin) build
        fs.add(Switch("preserve_relocs", on=["-Xnvlink", "--preserve-relocs"],
                      requires={"relocatable_device_code": [True]}))
    fs.add(
        Switch("use_fast_math", on=["--use_fast_math"]),
        Choice("ftz", _TRUE_FALSE, ["--ftz={}"], requires={"use_fast_math": [False]}),
        Choice("prec_div", _TRUE_FALSE, ["--prec-div={}"], requires={"use_fast_math": [False]}),
        Choice("prec_sqrt", _TRUE_FALSE, ["--prec-sqrt={}"], requires={"use_fast_math": [False]}),
        Choice("fmad", _TRUE_FALSE, ["--fmad={}"], requires={"use_fast_math": [False]}),
        Switch("extra_device_vectorization", on=["-extra-device-vectorization"]),
        Switch("restrict", on=["-restrict"]),
        Choice("ptxas_opt_level", [None, 0, 1, 2, 3], ["-Xptxas", "--opt-level={}"]),
        IntRange("maxrregcount", 24, 255, ["--maxrregcount={}"], default_value=255, omit_default=True),
        Choice("def_load_cache", [None, "ca", "cg", "cs", "cv"], ["-Xptxas", "--def-load-cache={}"]),
        Choice("def_store_cache", [None, "wb", "cg", "cs", "wt"], ["-Xptxas", "--def-store-cache={}"]),
        Choice("allow_expensive_optimizations", _TRUE_FALSE,
               ["-Xptxas", "--allow-expensive-optimizations={}"]),
    )
    if objective == "runtime":  # host-side only: inert in a device-only build
        fs.add(Switch("no_align_double", on=["--no-align-double"]))
    if objective == "compile":
        with_dlto = False  # device LTO happens at link time; a -cubin build never links
    elif with_dlto is None:
        with_dlto = dlto_links(nvcc, target)
    if with_dlto:
        fs.add(Switch("dlto", on=["-dlto"], requires={"relocatable_device_code": [True]}))
    return fs
