"""What evalpipe relies on about each EvalScope 1.14 benchmark adapter.

These are read from the adapters in ``evalscope/benchmarks/{gsm8k,ceval,ifeval,live_code_bench}`` and
kept here (not imported from EvalScope at run time) so the parent process never pays EvalScope's
import cost; ``tests/test_evalscope_facts.py`` fails when an EvalScope upgrade changes any of them.

``question_field`` is the record field whose text the adapter puts verbatim into the final user
message: the resume and audit identity checks test that message for it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AdapterFacts:
    name: str
    eval_split: str
    fewshot_split: str | None
    question_field: str
    default_subset: str | None
    max_few_shot: int | None = None  # None: unbounded (limited by the few-shot split)


ADAPTERS: dict[str, AdapterFacts] = {
    "gsm8k": AdapterFacts("gsm8k", eval_split="test", fewshot_split="train", question_field="question",
                          default_subset="main"),
    "ceval": AdapterFacts("ceval", eval_split="val", fewshot_split="dev", question_field="question",
                          default_subset=None),
    "ifeval": AdapterFacts("ifeval", eval_split="train", fewshot_split=None, question_field="prompt",
                           default_subset="default", max_few_shot=0),
    "live_code_bench": AdapterFacts("live_code_bench", eval_split="test", fewshot_split=None,
                                    question_field="question_content", default_subset="release_v6",
                                    max_few_shot=0),
}  # fmt: skip

# EvalScope stop reasons meaning "the output budget ran out" (OpenAI finish_reason "length" → max_tokens).
BUDGET_STOP_REASONS = frozenset({"max_tokens", "model_length"})

# IFEval instructions whose checker needs NLTK's punkt_tab tokenizer (count_sentences, word_tokenize).
IFEVAL_PUNKT_INSTRUCTIONS = frozenset(
    {"length_constraints:number_sentences", "change_case:capital_word_frequency"}
)

# LiveCodeBench extra_params that make EvalScope drop rows, which would shift every positional index.
LCB_FILTER_PARAMS = frozenset({"start_date", "end_date"})


def facts(benchmark: str) -> AdapterFacts:
    try:
        return ADAPTERS[benchmark]
    except KeyError:
        raise KeyError(f"no EvalScope adapter facts for benchmark {benchmark!r}") from None
