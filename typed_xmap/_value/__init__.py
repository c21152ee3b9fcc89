"""The NamedArray value: data, named axes, layout, pytree node, printing. Imports only ``_algebra``."""
