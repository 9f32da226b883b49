"""The profile registry and the checks of a profile against its schemas."""
