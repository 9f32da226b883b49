"""Retention sweeps, legal holds, quotas, and the walker that pages long sweeps."""
