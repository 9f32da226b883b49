"""Event digests: writing and reading them, their classes, and promotion of repeated episodes."""
