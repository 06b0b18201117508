"""``tavla chaos``: faults injected into the real stack under the open-loop game load.

Development tooling, like the ``tavla bench`` commands: nothing here runs in
production. :mod:`.load` plays the games, :mod:`.checks` reads back what the
game produced, what the broker carries and what the wallet settled, and
:mod:`.suite` starts the stack, injects the faults one after another and prints
the JSON line.
"""
