"""Report kinds: one module per kind (options, model, write, recompute, summarize, page) and
the one registry that ``verify``, the site builder and the CLI read."""
