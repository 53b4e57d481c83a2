"""Test double of SGLang 0.5.23's dependency-free ``function_call/parser_names`` module (a subset)."""

TOOL_CALL_PARSER_NAMES = [
    "deepseekv3",
    "glm45",
    "glm47",
    "qwen25",
]
