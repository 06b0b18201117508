"""The matchmaking service's pure model: lobby tables, ratings, pairing."""
