"""Implementations of the ports in :mod:`memnet.ports`."""
