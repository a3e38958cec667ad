"""Which GPU is present, and which nvcc architectures produce code that runs on it.

The runtime objective must build for the GPU the tuner measures on, so the
target is detected instead of assumed:

1. ``--gpu-arch sm_XY`` on the command line wins;
2. else ``nvidia-smi --query-gpu=compute_cap --format=csv,noheader``: the
   first GPU listed, or the one CUDA_VISIBLE_DEVICES names when it names a
   single index (nvidia-smi itself ignores that variable);
3. else PyCUDA, if importable (``Device(0).compute_capability()``);
4. else :data:`DEFAULT_GPU_ARCH` (no GPU here: the compile-only objective in
   CI, whose ptxas metrics then describe code for that architecture).

The architecture choices of the tuned space are the ones this nvcc can
target (``nvcc --list-gpu-code`` for real ``sm_XY`` codes, ``nvcc
--list-gpu-arch`` for virtual ``compute_XY`` ones) whose code can run on the
present GPU of compute capability X.Y:

* ``sm_AB`` (``-arch=sm_AB`` embeds SASS for A.B and PTX for compute_AB):
  runs when A.B <= X.Y, natively when A == X, through the driver's JIT of the
  embedded PTX otherwise;
* ``sm_XYa`` (arch-specific features, from sm_90a on): only on exactly X.Y;
* ``sm_ABf`` (family-specific, from sm_100f on): on the same major A == X
  with minor B <= Y;
* ``compute_XY`` (PTX only, JIT-compiled when the program loads): the
  native virtual architecture.

nvcc 13.0 lists neither the ``a`` nor the ``f`` variants, though it accepts
them (``sm_90a``, ``sm_100f``; it refuses ``sm_90f``): they are derived from
the listed codes by the rules above.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from measurement.process import run_command

__all__ = ["DEFAULT_GPU_ARCH", "GpuArch", "arch_choices_for", "detect_gpu_arch", "parse_compute_caps",
           "parse_gpu_codes", "parse_virtual_archs", "resolve_gpu_arch", "runs_on"]

log = logging.getLogger("ensemble.apps.nvcc_flags")

#: target when no GPU is found: the H100/H200 of the GPU machine this project measures on
DEFAULT_GPU_ARCH = "sm_90"

_CODE = re.compile(r"^sm_(\d+)([af]?)$")
_CAP = re.compile(r"^\s*(\d+)\.(\d+)\s*$")

Runner = Callable[..., Any]


@dataclass(frozen=True)
class GpuArch:
    """The target architecture and how it was chosen (``source``: --gpu-arch, nvidia-smi, pycuda, default)."""

    arch: str
    source: str

    @property
    def capability(self) -> tuple[int, int]:
        return capability_of(self.arch)


def capability_of(arch: str) -> tuple[int, int]:
    """``sm_90`` -> (9, 0); ``sm_120`` -> (12, 0); ``sm_86`` -> (8, 6)."""
    m = re.fullmatch(r"(?:sm|compute)_(\d+)[af]?", arch)
    if not m:
        raise ValueError(f"--gpu-arch {arch!r}: give a real architecture such as sm_90")
    digits = m.group(1)
    return int(digits[:-1]), int(digits[-1])


def parse_compute_caps(text: str) -> list[tuple[int, int]]:
    """Compute capabilities from ``nvidia-smi --query-gpu=compute_cap --format=csv,noheader`` (one per GPU)."""
    caps = []
    for line in text.splitlines():
        m = _CAP.match(line)
        if m:
            caps.append((int(m.group(1)), int(m.group(2))))
    return caps


def parse_gpu_codes(text: str) -> list[str]:
    """Real architectures (``sm_XY``) from ``nvcc --list-gpu-code``, in nvcc's order."""
    return [tok for tok in text.split() if _CODE.match(tok)]


def parse_virtual_archs(text: str) -> list[str]:
    """Virtual architectures (``compute_XY``) from ``nvcc --list-gpu-arch``."""
    return [tok for tok in text.split() if re.fullmatch(r"compute_\d+[af]?", tok)]


def runs_on(code: str, cap: tuple[int, int]) -> bool:
    """Whether a ``-arch=<code>`` build runs on a GPU of compute capability ``cap`` (rules in the module doc)."""
    m = _CODE.match(code)
    if m is None:
        m2 = re.fullmatch(r"compute_(\d+)", code)
        if m2 is None:
            return False  # arch-/family-specific PTX: not offered
        return capability_of(code) <= cap
    own = capability_of(code)
    suffix = m.group(2)
    if suffix == "a":
        return own == cap
    if suffix == "f":
        return own[0] == cap[0] and own[1] <= cap[1]
    return own <= cap


def arch_choices_for(cap: tuple[int, int], codes: Sequence[str], virtual: Sequence[str] = ()) -> list[str]:
    """The ``--gpu-architecture`` values of the runtime space for a GPU of capability ``cap``.

    Native first (the default of the space, and the reference build's
    target), then ``sm_XYa``, ``sm_XYf`` variants, the native PTX-only
    ``compute_XY``, then the older real architectures from newest to oldest.
    ``codes``/``virtual`` are what nvcc lists; when both are empty (nvcc
    unavailable) the choices are the native code and its PTX.
    """
    native = f"sm_{cap[0]}{cap[1]}"
    if not codes and not virtual:
        return [native, f"compute_{cap[0]}{cap[1]}"]
    plain = [c for c in codes if _CODE.match(c) and not _CODE.match(c).group(2)]  # type: ignore[union-attr]
    runnable = sorted((c for c in plain if runs_on(c, cap)), key=capability_of, reverse=True)
    choices: list[str] = []
    if native in runnable:
        choices.append(native)
        if cap >= (9, 0):
            choices.append(f"{native}a")
    explicit = [c for c in codes if c.endswith(("a", "f"))]
    derived_f = [f"{c}f" for c in runnable if capability_of(c) >= (10, 0)]
    for c in [*explicit, *derived_f]:
        if runs_on(c, cap) and c not in choices:
            choices.append(c)
    if f"compute_{cap[0]}{cap[1]}" in virtual:
        choices.append(f"compute_{cap[0]}{cap[1]}")
    choices += [c for c in runnable if c not in choices]
    if not choices:
        raise ValueError(f"nvcc supports no architecture that runs on compute capability {cap[0]}.{cap[1]} "
                         f"(it lists {', '.join(codes) or 'nothing'})")
    return choices


def _nvidia_smi_caps(run: Runner, nvidia_smi: str) -> list[tuple[int, int]]:
    # a missing nvidia-smi is a FAILED outcome of run_command, not an exception
    out = run([nvidia_smi, "--query-gpu=compute_cap", "--format=csv,noheader"], timeout=30)
    return parse_compute_caps(out.stdout) if out.ok else []


def _pycuda_cap() -> tuple[int, int] | None:
    try:
        import pycuda.driver as drv  # type: ignore[import-not-found]

        drv.init()
        if drv.Device.count() < 1:
            return None
        return tuple(drv.Device(0).compute_capability())  # type: ignore[return-value]
    except Exception:  # noqa: BLE001 - not installed, no driver, no device: all mean "not found"
        return None


def detect_gpu_arch(*, run: Runner = run_command, nvidia_smi: str = "nvidia-smi",
                    use_pycuda: bool = True) -> GpuArch | None:
    """The present GPU's ``sm_XY`` (first GPU), or None when no GPU is found."""
    caps = _nvidia_smi_caps(run, nvidia_smi)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()
    if caps:
        index = int(visible) if visible.isdigit() and int(visible) < len(caps) else 0
        major, minor = caps[index]
        return GpuArch(f"sm_{major}{minor}", "nvidia-smi")
    cap = _pycuda_cap() if use_pycuda else None
    if cap is not None:
        return GpuArch(f"sm_{cap[0]}{cap[1]}", "pycuda")
    return None


def resolve_gpu_arch(requested: str | None, **detect_kw: Any) -> GpuArch:
    """``--gpu-arch`` if given, else the detected GPU, else :data:`DEFAULT_GPU_ARCH`."""
    if requested:
        capability_of(requested)  # validates
        return GpuArch(requested, "--gpu-arch")
    found = detect_gpu_arch(**detect_kw)
    if found is not None:
        return found
    log.info("no GPU found (nvidia-smi, PyCUDA): targeting %s", DEFAULT_GPU_ARCH)
    return GpuArch(DEFAULT_GPU_ARCH, "default (no GPU found)")
