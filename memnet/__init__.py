"""mem.net: a governed, auditable memory service for AI agents.

The core package. Nothing below it imports ``azure.functions``; Azure SDKs are
imported only by ``memnet.adapters.azure``.
"""
