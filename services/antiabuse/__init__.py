"""The antiabuse service: a detector per restricted activity, alerts for the compliance team.

Multi-accounting (linked accounts, with pair verdicts for matchmaking), chip dumping,
chat abuse, assistance, consulting, rating manipulation and deliberate disconnects, and
the compliance team's cases and sanctions; see README.md.
"""
