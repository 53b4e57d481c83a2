"""Test double of SGLang 0.5.23's dependency-free ``reasoning_parser_names`` module (a subset)."""

REASONING_PARSER_NAMES = [
    "deepseek-r1",
    "deepseek-v3",
    "glm45",
    "kimi_k2",
    "qwen3",
]
