"""Framework-neutral HTTP: parse, authorise, call a service, map errors (docs/architecture.md)."""
