"""Run configuration: pydantic models (``extra="forbid"``) and YAML loading with field-path errors."""

from evalpipe.config.loader import load_config, load_plan
from evalpipe.config.models import (
    BenchmarkConfig,
    BenchmarkName,
    DatasetSource,
    GenerationConfig,
    ModelConfig,
    RunConfig,
    SamplingPlan,
    ServerConfig,
)

__all__ = [
    "BenchmarkConfig",
    "BenchmarkName",
    "DatasetSource",
    "GenerationConfig",
    "ModelConfig",
    "RunConfig",
    "SamplingPlan",
    "ServerConfig",
    "load_config",
    "load_plan",
]
