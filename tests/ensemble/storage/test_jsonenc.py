"""Our JSON encoding: explicit infinities/NaN, canonical text, helpful refusals."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

from ensemble.errors import StorageError
from ensemble.storage import default_database_url, jsonenc


def test_non_finite_floats_round_trip_as_standard_json():
    obj = {"best": math.inf, "worst": -math.inf, "nested": [1.5, {"x": math.nan}], "ok": None}
    text = jsonenc.dumps(obj)
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard token {c}"))  # strict JSON
    back = jsonenc.loads(text)
    assert back["best"] == math.inf and back["worst"] == -math.inf and math.isnan(back["nested"][1]["x"])
    assert back["nested"][0] == 1.5 and back["ok"] is None


def test_canonical_and_exact():
    assert jsonenc.dumps({"b": 1, "a": [0.1, True]}) == '{"a":[0.1,true],"b":1}'
    x = 0.1 + 0.2
    assert jsonenc.loads(jsonenc.dumps(x)) == x


def test_numpy_values_and_tuples_become_plain():
    text = jsonenc.dumps({"i": np.int64(3), "f": np.float32(0.5), "a": np.arange(3), "t": (1, 2),
                          "inf": np.float64("inf")})
    assert jsonenc.loads(text) == {"i": 3, "f": 0.5, "a": [0, 1, 2], "t": [1, 2], "inf": math.inf}


@pytest.mark.parametrize("bad, where", [({1: "x"}, "key 1"), ({"m": {1, 2}}, r"metrics\['m'\]: set")])
def test_refusals_name_the_place(bad, where):
    with pytest.raises(StorageError, match=where):
        jsonenc.dumps(bad, where="metrics")


def test_null_decodes_to_none():
    assert jsonenc.loads(None) is None


def test_default_database_url_is_a_file_in_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert default_database_url("BlockTuner") == f"sqlite:///{os.path.join(tmp_path, 'blocktuner.db')}"
    assert default_database_url("my app/../x") == f"sqlite:///{os.path.join(tmp_path, 'my_app_.._x.db')}"
    assert default_database_url("") == f"sqlite:///{os.path.join(tmp_path, 'ensemble.db')}"


def test_storage_never_reads_the_host_clock():
    """SQL timestamps must come from the database (heartbeats across hosts with skewed clocks).

    memory.py is the one exception: that store lives in one process, so the
    host's clock is the store's clock.
    """
    import ensemble.storage as pkg

    root = os.path.dirname(pkg.__file__)
    for folder, _dirs, files in os.walk(root):
        for name in files:
            if name.endswith(".py") and name != "memory.py":
                with open(os.path.join(folder, name), encoding="utf-8") as fh:
                    text = fh.read()
                for call in ("time.time(", "datetime.now(", "datetime.utcnow(", "date.today("):
                    assert call not in text, f"{name} reads the host clock via {call}"
