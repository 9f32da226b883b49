"""Forgetting a user or one conversation: jobs, the deletion ledger, receipts and tombstones."""
