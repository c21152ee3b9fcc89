"""The plugin's infrastructure: encoding named shapes as mypy types, reading literals and sizes, codes, messages."""
