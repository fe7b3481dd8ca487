"""Properties of an operator's call space (shrink and hunt walk it) and of the case
record's one expectation, checked with Hypothesis over seeds and indices."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from aclcheck.ops import DEFAULT, operator
from aclcheck.store.codec import is_safe_id

OP = operator(DEFAULT)
PRODUCTS = list(OP.products)


def sizes(case: object) -> list[int]:
    """Every axis size of the case's tensors (the record's shape fields, in order)."""
    return [d for desc in case.tensors().values() if desc is not None for d in desc.shape]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), index=st.integers(0, 10_000))
def test_random_cases_are_valid_seeded_and_safely_named(seed: int, index: int) -> None:
    case = OP.space.random_case(np.random.default_rng(seed), PRODUCTS, [], index)
    assert case is not None
    assert case.positive and not case.expectation.unspecified
    assert is_safe_id(case.id)
    again = OP.space.random_case(np.random.default_rng(seed), PRODUCTS, [], index)
    assert again == case


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_every_proposal_is_smaller_and_keeps_what_shrink_keeps(seed: int) -> None:
    case = OP.space.random_case(np.random.default_rng(seed), PRODUCTS, [], 0)
    assert case is not None
    before = sizes(case)
    for smaller in OP.space.proposals(case):
        after = sizes(smaller)
        assert len(after) == len(before)
        assert all(a <= b for a, b in zip(after, before, strict=True))
        assert math.prod(after) < math.prod(before) or sum(after) < sum(before)
        for field in ("product", "dtype", "format", "layout", "distribution", "seed"):
            assert getattr(smaller, field) == getattr(case, field), field
        assert is_safe_id(smaller.id)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), label=st.from_regex(r"[a-z][a-z0-9]{0,12}",
                                                              fullmatch=True))
def test_renamed_ids_are_safe_ids(seed: int, label: str) -> None:
    case = OP.space.random_case(np.random.default_rng(seed), PRODUCTS, [], 0)
    assert case is not None
    renamed = OP.space.renamed(case, label)
    assert is_safe_id(renamed.id) and label in renamed.id
    assert renamed.replace(id=case.id) == case


def test_the_contract_is_asked_once_per_case(monkeypatch) -> None:
    case = OP.space.random_case(np.random.default_rng(0), PRODUCTS, [], 0)
    assert case is not None
    case = case.replace(id=case.id)  # a fresh object: nothing computed yet
    calls = []
    expect = type(case).expect

    def counting(call: object) -> object:
        calls.append(call)
        return expect(call)

    monkeypatch.setattr(type(case), "expect", staticmethod(counting))
    for _ in range(3):
        assert case.expected_status == 0
        assert case.positive and case.out_written
        assert case.expectation.rule
    assert len(calls) == 1
