"""``tavla demo``: the whole story on a running ``tavla dev`` stack, through the gateway.

Two players register from Malta, top up with sandbox dollars, meet in the
auto-match queue, play a real-money game to the end (the server's dice, legal
plays the demo picks from the game's own list), are settled to the cent (the
demo works the figures out from the commission schedule itself,
:mod:`.schedule`, and prints them), and read their match analysis; a Florida
resident calling from Florida is refused real money; a pair that moves money
one way over four games is flagged on the compliance stream.

The stack is found as ``tavla dev`` places it (:class:`DevSettings`:
``TAVLA_DEV_PORT_OFFSET``, ``TAVLA_KAFKA_BOOTSTRAP``). The demo plays the one
proxy in front of the gateway that says where each player is
(``X-Forwarded-For``), so the stack must run with ``TAVLA_DEV_XFF_TRUSTED_HOPS=1``;
without it every player is placed nowhere and the demo stops at the first
deposit saying so. Everything goes through the gateway except reading the
compliance stream, which is the compliance team's own interface (the broker).
Exit status 0 when every step passed, 1 at the first failure, named.
"""
