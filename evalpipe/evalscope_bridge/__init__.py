"""The only EvalScope-aware code: materialize, task config, worker process, caches, outcomes.

When EvalScope upgrades, this package (and ``evalscope_bridge.facts``' drift test) is what changes.
Nothing here imports EvalScope at module load: it is imported inside the worker process only.
"""
