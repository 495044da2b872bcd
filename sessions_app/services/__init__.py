"""Writes: the only code that changes database rows or files on disk."""
