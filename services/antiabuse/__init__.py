"""The antiabuse service: a detector per restricted activity, alerts for the compliance team.

Today multi-accounting (linked accounts, with pair verdicts for matchmaking) and
chip dumping (one-directional money flow); see README.md.
"""
