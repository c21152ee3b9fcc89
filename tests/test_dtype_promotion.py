"""The algebra's dtype promotion (``promote_dtypes``: what the plugin gives ``concatenate``, ``einsum`` and the
operators on arrays of two dtypes) against JAX's own ``jnp.promote_types``, for every pair of exact dtypes."""

from __future__ import annotations

import itertools

import jax.numpy as jnp
import pytest

from typed_xmap._algebra import DTYPES, promote_dtypes

NAMES = sorted(DTYPES)


@pytest.mark.parametrize(("a", "b"), list(itertools.product(NAMES, NAMES)))
def test_promotion_is_jax_where_it_answers(a, b):
    promoted = promote_dtypes([a, b])
    if promoted is not None:
        assert promoted == jnp.promote_types(a, b).name


def test_promotion_answers_the_common_cases_and_leaves_the_rest():
    assert promote_dtypes(["int32", "float32"]) == "float32"  # concatenating int with float gives float
    assert promote_dtypes(["int64", "float16"]) == "float16"  # every int is below every float
    assert promote_dtypes(["bool", "int8", "int32"]) == "int32"
    assert promote_dtypes(["uint8", "int16"]) == "int16"
    assert promote_dtypes(["float16", "bfloat16"]) == "float32"
    assert promote_dtypes(["uint32", "int32"]) is None  # int64, or int32 without x64: left to run time
    assert promote_dtypes(["float32", "unknown"]) is None
    assert promote_dtypes([]) is None
