"""The ``typed-xmap`` command: ``check``, ``demo``, ``bench``."""
