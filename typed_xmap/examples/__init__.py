"""Small programs shipped with typed_xmap (the demo type-checks ``planted_bug.py``)."""
