"""The geo service: geolocation decisions and jurisdiction rules.

Today a skeleton that serves health, reflection and metrics only; its use
cases arrive with its issue.
"""
