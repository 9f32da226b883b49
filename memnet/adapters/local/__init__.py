"""Embedded default adapters: local files, no cloud account."""
