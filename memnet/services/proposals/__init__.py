"""Reviewing proposals in pending sections."""
