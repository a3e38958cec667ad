"""Reusable builder for toolchain flag spaces (gcc, nvcc, yosys/nextpnr, ...).

Flags are declared once with how they render to argv tokens and which other
flags they need; :class:`FlagSpace` turns them into an ``ensemble``
search space with the dependencies as constraints, and renders a tuned
configuration back to an argv list (never a shell string).
"""

from apps.flags.space import FlagSpace, Requirement
from apps.flags.spec import Choice, Flag, IntRange, PowerOfTwoRange, Switch

__all__ = ["Choice", "Flag", "FlagSpace", "IntRange", "PowerOfTwoRange", "Requirement", "Switch"]
