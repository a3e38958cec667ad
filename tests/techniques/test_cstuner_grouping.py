"""csTuner Section IV-C: pair CVs from the performance dataset and Algorithm 1, hand-worked."""

from __future__ import annotations

import collections
import math

import pytest

from techniques.cstuner.grouping import (
    algorithm1,
    dataset_cvs,
    pair_cv,
    sorted_deque,
    value_scale,
)


def test_algorithm1_hand_worked_deque() -> None:
    # Six ordered pairs of a, b, c, d in ascending CV (left = most correlated):
    #   (a,b) 0.0, (b,a) 0.1, (c,d) 0.2, (a,c) 0.5, (d,b) 0.7, (b,d) 0.9
    cvs = {("a", "b"): 0.0, ("b", "a"): 0.1, ("c", "d"): 0.2, ("a", "c"): 0.5, ("d", "b"): 0.7, ("b", "d"): 0.9}
    dq = sorted_deque(cvs, ["a", "b", "c", "d"])
    assert list(dq) == [("a", "b"), ("b", "a"), ("c", "d"), ("a", "c"), ("d", "b"), ("b", "d")]
    # i=0 left (a,b): new group [a,b]; i=1 right (b,d): b grouped, d alone -> [d];
    # i=2 left (b,a): both grouped, skip; i=3 right (d,b): both grouped, skip;
    # i=4 left (c,d): d grouped, c joins d's group; i=5 right (a,c): both grouped.
    assert algorithm1(dq, ["a", "b", "c", "d"]) == [["a", "b"], ["d", "c"]]
    assert not dq                                        # consumed


def test_algorithm1_right_pops_make_singletons() -> None:
    dq = collections.deque([("a", "b"), ("c", "d")])
    # left (a,b) -> [a,b]; right (c,d): both ungrouped -> [c], [d]
    assert algorithm1(dq) == [["a", "b"], ["c"], ["d"]]


def test_one_parameter_is_its_own_group() -> None:
    assert algorithm1(collections.deque(), ["only"]) == [["only"]]


def test_log2_scale_for_positive_numbers_index_otherwise() -> None:
    assert value_scale([1, 2, 4, 8]) == {1: 1.0, 2: 2.0, 4: 3.0, 8: 4.0}
    assert value_scale(["x", "y"]) == {"x": 1.0, "y": 2.0}
    assert value_scale([False, True]) == {False: 1.0, True: 2.0}


def test_pair_cv_reads_the_best_b_per_a_with_others_at_the_best() -> None:
    # b's best setting does not move with a (CV 0) when the others sit at the best...
    best = {"a": 1, "b": 2, "c": 1}
    records = [({"a": 1, "b": 2, "c": 1}, 1.0), ({"a": 1, "b": 4, "c": 1}, 2.0),
               ({"a": 2, "b": 2, "c": 1}, 1.5), ({"a": 2, "b": 4, "c": 1}, 3.0),
               # ...a record far from the best (c differs) must not count when a closer one exists
               ({"a": 2, "b": 8, "c": 8}, 0.5)]
    assert pair_cv(records, "a", "b", value_scale([1, 2, 4, 8]), best) == 0.0
    # settings of a absent from the dataset are skipped: only a in {1, 2} contribute
    records.append(({"a": 4, "b": 8, "c": 1}, 1.2))
    cv = pair_cv(records, "a", "b", value_scale([1, 2, 4, 8]), best)
    xs = [2.0, 2.0, 4.0]                                 # log2-scale b values for a = 1, 2, 4
    mean = sum(xs) / 3
    assert cv == pytest.approx(math.sqrt(sum((x - mean) ** 2 for x in xs) / 3) / mean)


def test_dataset_cvs_cover_every_ordered_pair_and_ignore_failures() -> None:
    domains = {"a": [1, 2], "b": [1, 2], "c": [1, 2]}
    records = [({"a": 1, "b": 1, "c": 1}, 1.0), ({"a": 2, "b": 1, "c": 2}, math.inf),
               ({"a": 2, "b": 2, "c": 1}, 2.0)]
    cvs = dataset_cvs(domains, records)
    assert set(cvs) == {(p, q) for p in "abc" for q in "abc" if p != q}


def test_dataset_where_every_sample_failed_is_refused_with_a_message() -> None:
    with pytest.raises(ValueError, match="every sample failed"):
        dataset_cvs({"a": [1, 2], "b": [1, 2]}, [({"a": 1, "b": 1}, math.inf)])
