"""The domain: pure models and rules, no I/O (ARCHITECTURE.md section 1)."""
