"""Context assembly and the reads it is made of."""
