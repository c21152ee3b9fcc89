"""Small programs shipped with typed_xmap.

The demo runs ``regression.py`` and type-checks a copy with a planted bug.
"""
