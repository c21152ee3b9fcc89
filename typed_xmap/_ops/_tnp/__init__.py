"""The functions ``typed_xmap.numpy`` re-exports (tnp internals)."""
