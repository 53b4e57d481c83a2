"""The only EvalScope-aware code: materialize, task config, worker process, caches, outcomes, and the NLTK
data EvalScope's IFEval scoring would otherwise download mid-run (``nltk_data``).

When EvalScope upgrades, this package (and ``evalscope_bridge.facts``' drift test) is what changes.
Nothing here imports EvalScope at module load: it is imported inside the worker process only.
"""
