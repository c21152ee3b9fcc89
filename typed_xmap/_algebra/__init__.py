"""The named-shape algebra: every rule about named shapes, written once, in pure Python.

It imports nothing outside this package (no jax, numpy or mypy), so the runtime (``NamedArray``,
``@tx.typed``, ``typed_xmap.numpy``, ``xmap``, sharding) and the mypy plugin share one copy of each
rule and each message. README.md beside this file says how the modules fit.
"""

from ._axis_map import (
    AxisMap as AxisMap,
    check_axis_name as check_axis_name,
    check_fits as check_fits,
    format_axis_list as format_axis_list,
    is_axis_map_leaf as is_axis_map_leaf,
    parse_axis_map as parse_axis_map,
)
from ._backward_placement import (
    BackwardOperand as BackwardOperand,
    BackwardRule as BackwardRule,
    backward_collectives as backward_collectives,
    backward_gap as backward_gap,
)
from ._containers import (
    leaf_bindings as leaf_bindings,
    meet_fields as meet_fields,
    without_groups as without_groups,
)
from ._conversions import (
    check_named as check_named,
    check_new_names as check_new_names,
    check_positional as check_positional,
)
from ._dtypes import (
    DTYPES as DTYPES,
    KINDS as KINDS,
    MARKER_OF_DTYPE as MARKER_OF_DTYPE,
    MARKERS as MARKERS,
    DTypeSpec as DTypeSpec,
    Float as Float,
    Int as Int,
    Num as Num,
    Shaped as Shaped,
    bf16 as bf16,
    bool_ as bool_,
    c64 as c64,
    f16 as f16,
    f32 as f32,
    f64 as f64,
    i8 as i8,
    i16 as i16,
    i32 as i32,
    i64 as i64,
    promote_dtypes as promote_dtypes,
    u8 as u8,
    u32 as u32,
)
from ._einsum import (
    STREAMED_CONTRACTION_MAX as STREAMED_CONTRACTION_MAX,
    ContractionKernel as ContractionKernel,
    EinsumOperand as EinsumOperand,
    EinsumResult as EinsumResult,
    EinsumSpec as EinsumSpec,
    contraction_kernel as contraction_kernel,
    dot_operation as dot_operation,
    dot_spec as dot_spec,
    einsum_result as einsum_result,
    parse_einsum as parse_einsum,
    positional_einsum as positional_einsum,
)
from ._errors import (
    MAX_MESSAGE as MAX_MESSAGE,
    AxisResourceConflict as AxisResourceConflict,
    ErrorKind as ErrorKind,
    NamedShapeError as NamedShapeError,
    NamedShapeSyntaxError as NamedShapeSyntaxError,
    UnboundAxisError as UnboundAxisError,
    capped as capped,
)
from ._indexing import (
    DYNAMIC as DYNAMIC,
    Gather as Gather,
    IndexPlan as IndexPlan,
    dynamic_slice_operation as dynamic_slice_operation,
    dynamic_slice_shape as dynamic_slice_shape,
    gather_resources as gather_resources,
    index_named_shape as index_named_shape,
    index_operation as index_operation,
    positional_bounds as positional_bounds,
    positional_key_error as positional_key_error,
    update_named_shape as update_named_shape,
)
from ._memory import (
    INT64_MAX as INT64_MAX,
    check_allocation as check_allocation,
)
from ._moe_placement import route_placement as route_placement
from ._moe_routing import (
    dispatch_axes as dispatch_axes,
    route_axes as route_axes,
)
from ._normalise_placement import (
    COMPUTES as COMPUTES,
    NORMALISATIONS as NORMALISATIONS,
    index_reduce_placement as index_reduce_placement,
    normalise_placement as normalise_placement,
    scan_placement as scan_placement,
    sort_placement as sort_placement,
)
from ._operations import (
    OPERATORS as OPERATORS,
    TNP_OPERATIONS as TNP_OPERATIONS,
    Operation as Operation,
    Operator as Operator,
    OperatorKind as OperatorKind,
    OpKind as OpKind,
    ResultDType as ResultDType,
    operations_of as operations_of,
)
from ._out_axes import (
    OUT_AXES_RULE as OUT_AXES_RULE,
    unlisted_axes as unlisted_axes,
    unlisted_axis_error as unlisted_axis_error,
    unlisted_return_error as unlisted_return_error,
)
from ._placement import (
    Collective as Collective,
    CollectiveKind as CollectiveKind,
    Placed as Placed,
    Placement as Placement,
    describe_placed as describe_placed,
    parse_placed_text as parse_placed_text,
)
from ._placement_contract import apart_contraction as apart_contraction
from ._placement_declared import (
    declared_placement_error as declared_placement_error,
    placement_mismatch as placement_mismatch,
)
from ._placement_layout import (
    conv_contraction as conv_contraction,
    conv_placement as conv_placement,
    gather_placement as gather_placement,
    rename_placement as rename_placement,
    select_placement as select_placement,
    split_placement as split_placement,
    update_placement as update_placement,
    vmap_placement as vmap_placement,
    window_placement as window_placement,
)
from ._placement_moves import move_placement as move_placement
from ._placement_named import NAMED_COLLECTIVES as NAMED_COLLECTIVES, named_collectives as named_collectives
from ._placement_rules import (
    broadcast_placement as broadcast_placement,
    contract_placement as contract_placement,
    keep_placement as keep_placement,
    reduce_placement as reduce_placement,
    stack_placement as stack_placement,
)
from ._reductions import (
    AxisArgument as AxisArgument,
    positional_dims as positional_dims,
    reduced_positional as reduced_positional,
    reduction_operation as reduction_operation,
    single_axis as single_axis,
    split_axis as split_axis,
)
from ._resources import (
    Conflict as Conflict,
    Resource as Resource,
    SerialLoop as SerialLoop,
    check_conflicts as check_conflicts,
    check_divisible as check_divisible,
    conflict_error as conflict_error,
    different_meshes as different_meshes,
    loop_conflict_error as loop_conflict_error,
    mesh_axis_names as mesh_axis_names,
    normalize_axis_resources as normalize_axis_resources,
    resource_conflicts as resource_conflicts,
    resource_count as resource_count,
    resource_name as resource_name,
    unknown_resource_keys as unknown_resource_keys,
)
from ._segment_placement import segment_placement as segment_placement
from ._segments import segment_shape as segment_shape
from ._selection import (
    float_logits as float_logits,
    integer_dtype as integer_dtype,
    like_shape as like_shape,
    sampled_shape as sampled_shape,
    sorted_shape as sorted_shape,
    top_k_shape as top_k_shape,
)
from ._shapes import (
    Binding as Binding,
    Mismatch as Mismatch,
    NamedShape as NamedShape,
    Size as Size,
    broadcast_positional as broadcast_positional,
    describe_named_shape as describe_named_shape,
    group_members as group_members,
    is_size as is_size,
    match_shape_spec as match_shape_spec,
    merge_bindings as merge_bindings,
    reduce_named_shape as reduce_named_shape,
    union_named_shapes as union_named_shapes,
)
from ._spec import (
    ANY_DIM as ANY_DIM,
    GROUP_PREFIX as GROUP_PREFIX,
    MANY_DIMS as MANY_DIMS,
    AxisSpec as AxisSpec,
    ShapeSpec as ShapeSpec,
    format_mesh_axes as format_mesh_axes,
    format_named_shape as format_named_shape,
    format_placed_name as format_placed_name,
    is_axis_name as is_axis_name,
    is_whole as is_whole,
    parse_named_axes as parse_named_axes,
    parse_positional as parse_positional,
    parse_shape_spec as parse_shape_spec,
    partition_entry as partition_entry,
    shown_spec as shown_spec,
    syntax_error as syntax_error,
)
from ._structure import (
    arange_shape as arange_shape,
    axis_sizes as axis_sizes,
    broadcast_to_shape as broadcast_to_shape,
    check_size as check_size,
    concatenate_shape as concatenate_shape,
    merge_axes_shape as merge_axes_shape,
    new_axis as new_axis,
    pad_shape as pad_shape,
    rename_shape as rename_shape,
    require_axis as require_axis,
    same_positional as same_positional,
    split_axis_shape as split_axis_shape,
    split_shape as split_shape,
    stack_shape as stack_shape,
    token_ids as token_ids,
    two_axes as two_axes,
)
from ._symbols import (
    StaticSize as StaticSize,
    SymbolicSize as SymbolicSize,
    format_size as format_size,
    meet_sizes as meet_sizes,
    parse_size as parse_size,
    parse_symbolic_spec as parse_symbolic_spec,
    size_add as size_add,
    size_floordiv as size_floordiv,
    size_mul as size_mul,
    sizes_differ as sizes_differ,
    symbol as symbol,
    symbolic_spec as symbolic_spec,
)
from ._transforms import (
    check_carry as check_carry,
    check_carry_dtype as check_carry_dtype,
    check_carry_placement as check_carry_placement,
    check_positional_carry_placement as check_positional_carry_placement,
    mapped_axes as mapped_axes,
    mapped_axis_size as mapped_axis_size,
    scan_length as scan_length,
    scan_pair_error as scan_pair_error,
    scanned_axis_size as scanned_axis_size,
)
from ._whole import (
    WHOLE as WHOLE,
    agreed_whole as agreed_whole,
    mapped_placement as mapped_placement,
)
from ._windows import (
    ConvPlan as ConvPlan,
    Padding as Padding,
    PoolPlan as PoolPlan,
    conv_plan as conv_plan,
    conv_transpose_plan as conv_transpose_plan,
    pool_plan as pool_plan,
    pooled_split_error as pooled_split_error,
)
