"""Replay: snapshots, the replay worker, its records, parked patches and the dry run."""
