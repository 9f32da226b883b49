"""Event search: the index side of events, embeddings, rank fusion and the embedder probe."""
