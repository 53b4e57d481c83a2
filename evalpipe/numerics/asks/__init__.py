"""How the numerics probe asks a server for log-probabilities: one module per way of asking, looked up by the
config's ``numerics.ask`` in :mod:`evalpipe.numerics.asks.registry`."""
