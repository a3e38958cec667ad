"""The heuristic specification parser (Garvey & Abdelrahman 2018, Sec. 7.3, Algorithm 3)."""

from __future__ import annotations

import pytest

from techniques.garvey import HEURISTICS, SpecError, load_heuristic, parse_spec

# Algorithm 3 of the paper, as printed (group by dimension, local memory, n = 1)
ALGORITHM_3 = """BX=1,BY=1,BZ=1,WY=1,WZ=1,CY=1,CZ=1,USE_LOCAL_MEMORY_INPUT=1,VX=1,
STORE_ARRAYS_AS_IMAGES=0,WX=1:NX:*2,CX=1:NX/WX:*2;
WY=1:NY:*2, CY=1:NY/WY:*2;
WZ=1:NY:*2, CZ=1:NZ/WZ:*2;
WX=1:NX:*2, CX=1:NX/WX:*2;
WY=1:NY:*2, CY=1:NY/WY:*2;
WZ=1:NZ:*2, CZ=1:NZ/WZ:*2;
"""
N256 = {"NX": 256, "NY": 256, "NZ": 256}


def test_algorithm_3_parses_into_six_groups() -> None:
    spec = parse_spec(ALGORITHM_3)
    assert len(spec.statements) == 6
    assert all(s.explores for s in spec.statements)
    assert spec.targets() >= {"WX", "CX", "USE_LOCAL_MEMORY_INPUT", "STORE_ARRAYS_AS_IMAGES"}
    first = list(spec.statements[0].expand(N256, {}))
    # WX, CX powers of two with WX * CX <= 256: 45 pairs; the fixed values ride along
    assert len(first) == 45
    assert {(c["WX"], c["CX"]) for c in first} == {(1 << a, 1 << b) for a in range(9) for b in range(9 - a)}
    assert all(c["WY"] == 1 and c["USE_LOCAL_MEMORY_INPUT"] == 1 for c in first)


def test_ranges_expressions_best_and_functions() -> None:
    s = parse_spec("A=2:20:+6, B=A*2-1, C=best.A/2, D=if(ITER==0, min(A, 3), max(A, 3)), E=A/4;").statements[0]
    got = list(s.expand({"ITER": 0}, {"A": 8}))
    assert [c["A"] for c in got] == [2, 8, 14, 20]
    assert [c["B"] for c in got] == [3, 15, 27, 39]
    assert all(c["C"] == 4 for c in got)
    assert [c["D"] for c in got] == [2, 3, 3, 3]
    assert [c["E"] for c in got] == [0.5, 2, 3.5, 5]  # exact division: an integer only when it divides


def test_comments_and_trailing_comma() -> None:
    spec = parse_spec("# header\nWX=1:4:*2, # inline\nCX=1;\n\n;")
    assert len(spec.statements) == 1
    assert [c["WX"] for c in spec.statements[0].expand({}, {})] == [1, 2, 4]


@pytest.mark.parametrize("text, line, col, words", [
    ("WX=1:NX*2;", 1, 10, "step"),
    ("WX=1:NX:*2,\nCX=1:NX/WX:;", 2, 12, "step"),
    ("WX=1:NX:*2", 1, 11, "';'"),
    ("WX=;", 1, 4, "number"),
    ("WX=1 $ 2;", 1, 6, "unexpected character"),
    ("WX=foo(1);", 1, 4, "unknown function"),
    ("WX=min(1);", 1, 4, "takes 2"),
    ("\n\n  =3;", 3, 3, "parameter name"),
    ("", 1, 1, "no statements"),
])
def test_malformed_input_names_line_and_column(text: str, line: int, col: int, words: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_spec(text, source="bad.spec")
    assert (err.value.line, err.value.col) == (line, col)
    assert words in str(err.value) and f"bad.spec:{line}:{col}" in str(err.value)


def test_evaluation_errors_name_the_place() -> None:
    spec = parse_spec("WX=1;\nCX=NX/(WX-1);", source="e.spec")
    with pytest.raises(SpecError, match="e.spec:2:.*division by zero"):
        list(spec.statements[1].expand({"NX": 8, "WX": 1}, {}))
    with pytest.raises(SpecError, match=r"e.spec:2:4: unknown name NX"):
        list(spec.statements[1].expand({"WX": 2}, {}))
    with pytest.raises(SpecError, match="step must be greater than 1"):
        list(parse_spec("A=1:8:*1;").statements[0].expand({}, {}))
    with pytest.raises(SpecError, match=r"1:1: QX is not a parameter"):
        parse_spec("QX=1;", source="t").check_targets({"WX"})


def test_shipped_heuristics_parse_and_user_files_load(tmp_path) -> None:  # type: ignore[no-untyped-def]
    for h in HEURISTICS:
        assert load_heuristic(h).statements
    f = tmp_path / "mine.spec"
    f.write_text("WX=1:NX:*2;\n")
    assert len(load_heuristic(str(f)).statements) == 1
    with pytest.raises(SpecError, match="neither one of"):
        load_heuristic(str(tmp_path / "missing.spec"))
    f.write_text("WX=1:NX:*2\nWY=1;")
    with pytest.raises(SpecError, match=r"mine.spec:2:1"):
        load_heuristic(str(f))
