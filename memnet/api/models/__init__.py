"""Typed request and response bodies of the HTTP API (issue 14), in pydantic v2."""
