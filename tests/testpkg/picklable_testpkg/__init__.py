"""A package with every shipping problem kind, for tests and the audit."""
