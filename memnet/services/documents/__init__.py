"""Documents: the governed write path (claim, audit, document, completion), reads,
history and listing."""
