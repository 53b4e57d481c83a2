"""Run configuration: pydantic models (``extra="forbid"``) and YAML loading with field-path errors.

Every model the run config's YAML validates into lives here, one module per section (``model``, ``server``,
``generation``, ``benchmarks``, ``gates``, ``speed``, ``code_execution``; ``base`` the strict base they share)
and ``models`` holding ``RunConfig``, which re-exports every section; ``loader`` reads the YAML.  The config
is plain data: it imports nothing of evalpipe but ``errors`` and names a benchmark, a stratification or a
server kind with a string (``registry_names``), which the resolve step (``evalpipe.resolve``) looks up.
Import from the modules (``evalpipe.config.loader.load_config``, ``evalpipe.config.models.RunConfig``): this
``__init__`` imports nothing.
"""
