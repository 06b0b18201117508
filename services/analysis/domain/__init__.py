"""Pure evaluation code of the analysis service (no I/O beyond reading shipped data)."""
