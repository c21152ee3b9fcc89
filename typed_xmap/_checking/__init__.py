"""Run-time checking: ``@tx.typed``, annotation classes, containers, the import hook."""
