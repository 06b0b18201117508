"""The analysis service: position evaluation and match analysis with GNU Backgammon's nets.

Today a skeleton that serves health, reflection and metrics only; its use
cases arrive with its issue.
"""
