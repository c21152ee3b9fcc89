"""treescope support (optional dependency): a NamedArray renders as its summary line and draws by axis name.

Imported only from the hooks ``treescope`` itself calls (``_display.py``), so treescope is needed
only by those who use it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from treescope import ndarray_adapters, rendering_parts

from .._value._named_array import NamedArray
from .._value._printing import readable, summary_line


def render(x: NamedArray, path: str | None) -> Any:
    """``<NamedArray(float32[batch=2, embed=3]) min=.. max=.. mean=..>``, unfolding to the values."""
    label = rendering_parts.abbreviation_color(rendering_parts.text(f"<{summary_line(x)}>"))
    if not readable(x):
        return label
    return rendering_parts.build_custom_foldable_tree_node(
        label=label,
        contents=rendering_parts.fold_condition(
            expanded=rendering_parts.indented_children([rendering_parts.text(repr(x))])
        ),
        path=path,
        expand_state=rendering_parts.ExpandState.COLLAPSED,
    ).renderable


class NamedArrayAdapter(ndarray_adapters.NDArrayAdapter[NamedArray]):  # type: ignore[misc]  # treescope is untyped
    """The data's dims to treescope: the positional dims by index, the named ones by name only."""

    def get_axis_info_for_array_data(self, array: NamedArray) -> tuple[ndarray_adapters.AxisInfo, ...]:
        positional = tuple(ndarray_adapters.PositionalAxisInfo(i, size) for i, size in enumerate(array.shape))
        sizes = array.named_shape
        return positional + tuple(ndarray_adapters.NamedPositionlessAxisInfo(a, sizes[a]) for a in array.axes)

    def get_array_data_with_truncation(
        self, array: NamedArray, mask: Any, edge_items_per_axis: tuple[int | None, ...]
    ) -> tuple[np.ndarray, np.ndarray]:
        data = np.asarray(array.data)
        mask = np.broadcast_to(np.asarray(True if mask is None else mask), data.shape)
        for dim, edge in enumerate(edge_items_per_axis):
            if edge is not None and data.shape[dim] > 2 * edge + 1:
                keep = np.r_[0:edge, 0, data.shape[dim] - edge : data.shape[dim]]
                data, mask = np.take(data, keep, axis=dim), np.take(mask, keep, axis=dim).copy()
                middle = [slice(None)] * data.ndim
                middle[dim] = edge  # type: ignore[call-overload]  # an index in one dim
                mask[tuple(middle)] = False
        return data, mask

    def get_array_summary(self, array: NamedArray, fast: bool) -> str:
        return summary_line(array)

    def get_numpy_dtype(self, array: NamedArray) -> np.dtype[Any] | None:
        dtype = array.dtype
        return dtype if isinstance(dtype, np.dtype) else None

    def should_autovisualize(self, array: NamedArray) -> bool:
        return readable(array)
