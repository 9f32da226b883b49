"""In-memory blob and queue adapters: the embedded ones' semantics, no disk (docs/testing.md)."""
