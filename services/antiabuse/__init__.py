"""The antiabuse service: multi-accounting, collusion, chip-dumping, bot and disconnect monitoring.

Today a skeleton that serves health, reflection and metrics only; its use
cases arrive with its issue.
"""
