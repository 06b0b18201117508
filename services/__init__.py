"""Tavla's services. Each sub-package owns one area; ARCHITECTURE.md gives the shape they share."""
