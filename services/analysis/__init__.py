"""The analysis service: position evaluation and match analysis with GNU Backgammon's nets.

``EvaluatePosition``, ``BestMoves``, the game's disconnection settlement shares and
the analysis of finished matches (``MatchAnalysed``); see README.md.
"""
