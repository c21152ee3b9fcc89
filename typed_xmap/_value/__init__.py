"""The NamedArray value: data, named axes, layout, pytree node, printing. Imports only ``_algebra``.

Importing the package equips the class: its printing, operators and conversions, and its pytree node."""

from . import _operators, _printing, _pytree  # noqa: F401  # each installs itself on NamedArray
