"""Pure domain of the geo service: ISO codes, jurisdiction rules, decisions.

Nothing here does I/O except reading the rule files shipped in
``jurisdictions/``; the address databases are read by ``services.geo.lookup``.
"""
