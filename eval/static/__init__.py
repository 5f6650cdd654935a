"""The static checks, before any candidate code runs (standard library only)."""
