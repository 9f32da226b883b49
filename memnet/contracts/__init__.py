"""Contracts shipped with the core: the profile meta-schema."""
