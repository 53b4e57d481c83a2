"""Sandboxed execution of model-written code (bubblewrap, util-linux unshare, or explicitly none); its
settings are the run config's ``code_execution`` section (``evalpipe.config.code_execution``).

``probe`` — what works here and what ``auto`` means; ``run`` — wrap or run one program and classify what was
denied; ``view`` — the read-only paths and the environment allow-list; ``cgroup`` — the process limit for
root; ``stage`` — the inside of the ``unshare`` sandbox.
"""

from evalpipe.config.code_execution import CodeExecutionConfig, SandboxKind, SandboxLimits, SandboxRequest
from evalpipe.sandbox.run import SandboxedCommand, SandboxPolicy, SandboxResult, run_sandboxed, wrap

__all__ = [
    "CodeExecutionConfig",
    "SandboxKind",
    "SandboxLimits",
    "SandboxPolicy",
    "SandboxRequest",
    "SandboxResult",
    "SandboxedCommand",
    "run_sandboxed",
    "wrap",
]
