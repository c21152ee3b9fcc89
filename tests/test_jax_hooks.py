"""The private JAX hooks of typed_xmap._value._compat: when a JAX release moves one, these fail loudly.

Without them typed_xmap still computes the same results; it loses our frames' filtering from tracebacks
(tests/test_tracebacks.py) and its own message where JAX takes a NamedArray for an array
(tests/test_leaves_and_scalars.py)."""

import os

import jax.numpy as jnp
import pytest
from jax._src import core, traceback_util

import typed_xmap as tx
from typed_xmap._value import _tracebacks

PACKAGE = os.path.dirname(os.path.abspath(tx.__file__))


def test_the_traceback_filter_hooks_are_where_we_reach_them():
    assert callable(traceback_util.register_exclusion) and callable(traceback_util.api_boundary)
    assert all(not traceback_util.include_filename(os.path.join(p, "x.py")) for p in _tracebacks.hidden_paths())
    assert traceback_util.include_filename(os.path.join(PACKAGE, "examples", "tour.py"))  # user code stays


def test_the_abstractify_hook_is_where_we_reach_it():
    assert isinstance(core.pytype_aval_mappings, dict)
    assert tx.named(jnp.ones(2), ["a"]).__class__ in core.pytype_aval_mappings
    with pytest.raises(tx.NamedShapeError) as info:
        core.typeof(tx.named(jnp.ones(2), ["a"]))
    assert "JAX took NamedArray(float32[a=2]) for a positional array" in str(info.value)
