"""The game service: tables in play: dice, moves, cube, resign, clocks, disconnects.

The only place where a game's state changes; see ``README.md`` beside this file for
its modules, behaviour, settings and benchmark.
"""
