"""Where mypy and pyright must read typed_xmap's stubs differently; never imported at run time.

mypy takes the bare name ``MYPY`` as always true, as it does ``TYPE_CHECKING`` (mypy/reachability.py);
pyright takes only ``TYPE_CHECKING`` so, checks both branches of ``if MYPY:``, and gives a name imported
from another module its last declaration. ``MYPY`` is ``TYPE_CHECKING`` under another name.

``StaticBase`` is the base of ``NamedArray_``: ``Generic`` to mypy, where the plugin reads the dtype and the
named shape from its three parameters, and ``TypeArgumentsIgnored`` to pyright, so that ``NamedArray_`` is
one class to pyright whatever its arguments. ``tx.NamedArray`` is then that class to pyright (and a class
can be ``isinstance``'s argument, ``Annotated``, mypy's ``tx.NamedArray``, cannot), and what tnp returns is
that same class, in a ``list`` or ``dict`` too.
"""

from typing import TYPE_CHECKING as MYPY, Any


class TypeArgumentsIgnored:
    """pyright reads a class that is not generic and defines ``__class_getitem__`` (and its subclasses) as
    itself, whatever its type arguments, and never parses them: ``NamedArray[f32, "batch in"]`` is then
    ``NamedArray_``, its spec string no forward reference."""

    def __class_getitem__(cls, item: Any) -> Any:
        return cls


if MYPY:
    from typing import Generic as StaticBase
else:
    StaticBase = TypeArgumentsIgnored

__all__ = ["MYPY", "StaticBase"]
