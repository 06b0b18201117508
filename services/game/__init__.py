"""The game service: tables in play: dice, moves, cube, resign, clocks, disconnects (issue 4).

Today a skeleton that serves health, reflection and metrics only; its use
cases arrive with its issue.
"""
