"""Backgammon rules library: every rule of the game, pure (no I/O, no asyncio, no other services).

What it owns, one module each:

- ``board``: the position model (:class:`Board`, seen from the player on roll);
- ``position_id`` / ``match_id``: GNU Backgammon Position IDs and Match IDs, bit-exact;
- ``movegen``: legal plays, the plain pure-Python reference; ``plays``: the same through
  the C fast path ``_fastmoves.c`` (built by setup.py), falling back to the reference;
- ``notation``: gnubg move notation (``13/7* 8/7``, ``bar/22``, ``6/off``, ``8/4(2)``);
- ``cube``, ``resign``, ``scoring``, ``match``: doubling cube (cap, beavers, Crawford),
  resignations, results (gammons, backgammons, Jacoby), match and money scores;
- ``game``: a whole game as pure transitions on a frozen :class:`Game` value;
- ``dice``: provably fair dice (commit, HMAC-SHA256 with rejection sampling, verify);
- ``matfile``: Jellyfish ``.mat`` export with XG header tags;
- ``bearoff``: the one-sided bear-off database (gnubg-style roll distributions for up
  to 15 checkers on the six home points; its only I/O is an optional cache file);
  ``bearoff_eval``: exact two-sided bear-off chances and Janowski cubeful equity;
- ``selfplay`` (random games for tests), ``bench`` and ``cli`` (``tavla rules|dice|bench``).

Errors are :class:`errors.RulesError` subclasses (a ``ValueError``) whose message says
what was wrong and what is allowed.

Usage, as the game service plays a turn::

    from services.backgammon import dice, game
    from services.backgammon.match import MatchRules, new_match, record_game

    match = new_match(MatchRules(length=5))           # Crawford on, cube cap 64
    seed = secrets.token_bytes(32)                    # the caller owns randomness
    published = dice.commitment(seed)                 # shown to players before play
    number, (die0, die1) = dice.opening_roll(seed, client_seed)
    g = game.start_game(match.cube_rules(), die0, die1)   # higher die moves first
    options = game.plays(g)                           # [Play(steps, result, notation)]
    g = game.play(g, "8/5 6/5")                       # or game.play(g, options[0])
    g = game.double(g); g = game.take(g)              # before the next roll
    g = game.roll(g, dice.roll(seed, client_seed, number + 1))
    ...
    if g.result is not None:
        match = record_game(match, g.result)          # score, Crawford state

For move generation alone: ``plays.legal_plays(board, (d1, d2))``, with
``position_id.decode(...)`` / ``encode(...)`` around it.
"""
