"""Cases and sanctions: alerts grouped for review, resolved as cleared or sanctioned, and
each sanction published for the service that owns the state (README, "Cases")."""
