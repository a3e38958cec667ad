"""``ensemble-tuner predict-wg`` and ``ensemble-tuner serve-wg`` (entry points in ``ensemble.commands``).

    ensemble-tuner predict-wg --kernel gaussian3.float --device 0 --rows 1024 --cols 1024
    ensemble-tuner predict-wg --kernel my_stencil.cl --device-json dev.json --w-max 256 --rows 512 --cols 512
    ensemble-tuner serve-wg --port 8765 --database wg_service.db

``--kernel`` is a file of OpenCL C made by ``apps.workgroup.kernels`` or the
name of one of the project's kernels (``gaussian1.float``, ``he.double``,
``gol.int``, ...).  ``--device`` opens an OpenCL device (name part or index)
and reads its features; ``--device-json`` reads them from a file instead
(``apps.workgroup.features.device_features`` output), for machines without
the device.  W_max(s) is the device's maximum, lowered to the compiled
kernel's when the kernel can be built, or ``--w-max``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from apps.workgroup.features import device_features
from apps.workgroup.kernels import opencl_source, real_world_kernels
from apps.workgroup.predict import predict, shipped_predictor, train
from ensemble.errors import ConfigurationError
from techniques.workgroup import METHODS
from techniques.workgroup.models import CLASSIFIERS

__all__ = ["predict_wg", "serve_wg"]


def _model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--method", choices=METHODS, default="speedup", help="Section 4's method (default speedup)")
    p.add_argument("--model", choices=sorted(CLASSIFIERS), default="J48", help="classifier for --method classifier")
    p.add_argument("--fallback", choices=("baseline", "random", "nearest"), default="nearest")
    p.add_argument("--data", metavar="DIR", help="train on this extract instead of the shipped one")
    p.add_argument("--seed", type=int, default=0)


def _predictor(a: argparse.Namespace) -> Any:
    if a.data:
        return train(a.method, model=a.model, fallback=a.fallback, seed=a.seed, data=a.data)
    return shipped_predictor(a.method, a.model, a.fallback, a.seed)


def _kernel_source(spec: str) -> tuple[str, str | None]:
    """(source, dtype or None) for a file path or a project kernel name."""
    path = Path(spec)
    if path.exists():
        return path.read_text(), None
    known = {k.name: k for d in ("float", "double") for k in real_world_kernels(d)}
    if spec in known:
        return opencl_source(known[spec]), known[spec].dtype
    raise ConfigurationError(f"--kernel {spec!r}: neither a file nor a project kernel; known: {sorted(known)}")


def _kernel_max(device: Any, source: str) -> int | None:
    """CL_KERNEL_WORK_GROUP_SIZE of the built kernel, or None when it does not build."""
    try:
        import pyopencl as cl

        ctx = cl.Context([device])
        k = cl.Program(ctx, source).build().stencil
        return int(k.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, device))
    except Exception:  # noqa: BLE001 - a kernel that does not build is answered with W_safe by predict()
        return None


def predict_wg(argv: list[str]) -> int:
    """Print the predicted work-group size of a kernel on a device as JSON."""
    p = argparse.ArgumentParser(prog="ensemble-tuner predict-wg", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kernel", required=True, help="OpenCL C file or project kernel name")
    p.add_argument("--device", help="OpenCL device name part or index")
    p.add_argument("--platform", help="OpenCL platform name part or index")
    p.add_argument("--device-json", metavar="FILE", help="device features as JSON instead of --device")
    p.add_argument("--rows", type=int, default=1024)
    p.add_argument("--cols", type=int, default=1024)
    p.add_argument("--dtype", choices=("int", "float", "double"), help="default: the kernel's own or float")
    p.add_argument("--w-max", type=int, help="W_max(s) (default: from the device and the built kernel)")
    _model_args(p)
    a = p.parse_args(argv)
    source, kdtype = _kernel_source(a.kernel)
    dtype = a.dtype or kdtype or "float"
    if a.device_json:
        dev = {k: float(v) for k, v in json.loads(Path(a.device_json).read_text()).items()}
        w_max = a.w_max or int(dev.get("max_work_group_size", 0))
    else:
        from measurement.opencl import OpenCLBackend

        be = OpenCLBackend(a.platform, a.device)
        dev = device_features(be.device)
        kmax = _kernel_max(be.device, source)
        w_max = a.w_max or min(be.max_work_group_size, kmax or be.max_work_group_size)
    if not w_max:
        raise ConfigurationError("predict-wg: W_max(s) is unknown; pass --w-max or a device")
    pred = predict(_predictor(a), source, dev, a.rows, a.cols, dtype, w_max)
    out = {"wr": pred.size[0], "wc": pred.size[1], "local_size": [pred.size[1], pred.size[0]],
           "method": pred.method, "w_max": w_max, "note": pred.note}
    print(json.dumps(out))
    if pred.note:
        print(f"predict-wg: {pred.note}", file=sys.stderr)
    return 0


predict_wg.summary = "predict the OpenCL work-group size of a stencil (Cummins et al.)"  # type: ignore[attr-defined]


def serve_wg(argv: list[str]) -> int:
    """Run the prediction service on 127.0.0.1 until interrupted."""
    from apps.workgroup.service import PredictionService

    p = argparse.ArgumentParser(prog="ensemble-tuner serve-wg",
                                description="Work-group size prediction service on 127.0.0.1 "
                                            "(request format: apps/workgroup/service.py, docs/CUMMINS.md)")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--database", default="wg_service.db", help="SQLite file recording requests and reports")
    _model_args(p)
    a = p.parse_args(argv)
    svc = PredictionService(_predictor(a), a.database, port=a.port)
    print(f"serve-wg: listening on {svc.url} (requests and reports -> {a.database})", flush=True)
    try:
        svc.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        svc.close()
    return 0


serve_wg.summary = "serve work-group size predictions to running OpenCL programs"  # type: ignore[attr-defined]
