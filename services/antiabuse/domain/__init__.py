"""Anti-abuse domain: pure findings (no database, no broker), one module per detector."""
