"""evalpipe: auditable accuracy sign-off for LLM serving releases.

Stages talk through files in a run directory (see ``evalpipe.artifacts.schema``); each stage can be re-run alone.
"""

__version__ = "0.1.0"
