"""Hold the GPU's queue while timed work is enqueued, so that CUDA events time the GPU and not the host.

Why: ``start.record(); kernel(...); end.record()`` on an idle stream lets the
GPU take the start timestamp as soon as that record reaches it, and then wait
for the launch the host is still preparing (PyCUDA packs an unprepared call's
arguments in Python, tens of microseconds). The interval between the events
then includes that wait. Our own measurements show it: Nsight Compute's
kernel durations were 0.4-3.5 % shorter than the benchmark's event medians
for the same kernels, and under ncu, whose API interception slows the host,
the events of a 0.73 ms j3d7pt kernel read 0.86 ms (docs/STENCILS.md, "Nsight
Compute on the missed stencils' best kernels"). OpenCL's profiling
timestamps (``measurement.opencl``) mark the kernel's own start and end, so
that backend has no such bias, and the two backends' figures differ in kind.

The remedy is the one NVIDIA's nvbench uses (its "blocking kernel"): before
the timed region, a one-thread kernel spins on a flag in page-locked host
memory mapped into the device. The host enqueues the start event, the
launches and the end event behind it, then sets the flag; the GPU reaches
the start event with everything already queued. The spin ends by itself
after ``timeout`` seconds of GPU time (a host stalled between enqueue and
release, a debugger), and such a measurement is counted in ``timeouts`` so
that the caller can report or discard it; it then carries the old bias, no
worse.

Not thread-safe: one hold per backend, used by one measurement at a time
(the measurement drivers already serialise launches on a device).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = ["StreamHold"]

#: flag[0]: set by the host to release; flag[1]: set by the kernel when it gave up waiting.
_SOURCE = r"""
extern "C" __global__ void ens_stream_hold(volatile int *flag, long long timeout_ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  while (flag[0] == 0) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if ((long long)(t - t0) > timeout_ns) { flag[1] = 1; return; }
  }
}
"""


class StreamHold:
    """A reusable hold for one CUDA backend (its driver module, architecture and ``load``).

    ``with hold.held(): ...`` enqueues the spinning kernel, runs the block (which
    enqueues the timed work) and releases the kernel on the way out, also when
    the block raises. Call :meth:`settle` after synchronising: it counts a hold
    that ended by timeout.
    """

    #: pairs of flags used in turn
    SLOTS = 64

    def __init__(self, backend: Any, timeout: float = 1.0) -> None:
        if not timeout > 0:
            raise ValueError(f"StreamHold(timeout={timeout!r}): must be > 0 seconds (default 1.0)")
        from measurement.cuda import compile_cuda

        drv = backend._drv
        self._module, self._fn = backend.load(compile_cuda(_SOURCE, arch=backend.arch), "ens_stream_hold")
        # one (release, gave-up) pair per hold, used in turn: re-arming a pair never reaches a hold kernel
        # still queued from an earlier measurement that ended in an error before it synchronised
        self._flags = drv.pagelocked_zeros((self.SLOTS, 2), np.int32, mem_flags=drv.host_alloc_flags.DEVICEMAP)
        self._base = int(self._flags.base.get_device_pointer())
        self._timeout_ns = np.int64(int(timeout * 1e9))
        self._slot = -1
        self.holds = 0
        self.timeouts = 0

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        self._slot = (self._slot + 1) % self.SLOTS
        flag = self._flags[self._slot]
        flag[:] = 0
        self._fn(np.intp(self._base + self._slot * self._flags.strides[0]), self._timeout_ns,
                 grid=(1, 1, 1), block=(1, 1, 1))
        try:
            yield
        finally:
            flag[0] = 1  # page-locked and mapped: the spinning kernel reads it over the bus
            self.holds += 1

    def settle(self) -> bool:
        """After the stream is synchronised: True (and counted) when the last hold ended by its timeout."""
        late = self._slot >= 0 and bool(self._flags[self._slot, 1])
        self.timeouts += late
        return late
