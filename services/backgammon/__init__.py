"""Backgammon rules library (docstring filled in below)."""
