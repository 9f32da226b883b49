"""Compaction and freshness of documents, and the digests compaction writes."""
