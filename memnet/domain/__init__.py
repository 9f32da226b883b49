"""The domain: pure models and rules, no I/O (docs/architecture.md, "The layers")."""
