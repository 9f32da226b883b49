"""Azure adapters. The only place the Azure SDKs are imported."""
