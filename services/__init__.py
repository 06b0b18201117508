"""Tavla's services. Each sub-package owns one area; see ARCHITECTURE.md for the shape they share."""
