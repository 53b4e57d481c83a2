"""Run configuration: pydantic models (``extra="forbid"``) and YAML loading with field-path errors.

Every model the run config's YAML validates into lives here: ``models`` (``RunConfig`` and its sections),
and a module of its own for a section that one feature reads (``speed``, ``code_execution``); ``loader``
reads the YAML.  Import them from their modules (``evalpipe.config.loader.load_config``,
``evalpipe.config.models.RunConfig``): this ``__init__`` imports nothing, because the feature packages the
config validates names against (the benchmark registry, which reaches the sandbox) import their own settings
from this package, and a package face importing ``models`` would close that loop.
"""
