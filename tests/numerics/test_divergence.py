"""``evalpipe.stats.divergence``: the top-k KL against the full-vocabulary KL it bounds, and the signed-rank test
against scipy's (a published implementation) and against its own inversion."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import wilcoxon

from evalpipe.stats.divergence import merge_duplicates, shift_test, signed_rank_null, topk_kl


def _logprobs(p: np.ndarray, k: int) -> dict[str, float]:
    top = np.argsort(-p)[:k]
    return {f"t{i}": math.log(p[i]) for i in top}


def test_topk_kl_is_zero_for_identical_lists_and_a_lower_bound_of_the_full_kl() -> None:
    rng = np.random.default_rng(3)
    for _ in range(200):
        p = rng.dirichlet(np.full(60, 0.3))
        q = np.abs(p + rng.normal(0, 0.01, 60)) + 1e-9
        q /= q.sum()
        full = float(np.sum(p * (np.log(p) - np.log(q))))
        coarse = topk_kl(_logprobs(p, 20), _logprobs(q, 20))
        assert 0 <= coarse <= full + 1e-9
    same = _logprobs(rng.dirichlet(np.ones(30)), 20)
    assert topk_kl(same, same) == 0.0


def test_tokens_of_one_text_are_one_bucket() -> None:
    merged = merge_duplicates([("a", math.log(0.2)), ("b", math.log(0.1)), ("a", math.log(0.3))])
    assert merged["a"] == pytest.approx(math.log(0.5)) and merged["b"] == pytest.approx(math.log(0.1))


@pytest.mark.parametrize("n", [5, 9, 12, 20, 35, 50])
def test_the_p_value_is_scipys_exact_signed_rank_p_value(n: int) -> None:
    rng = np.random.default_rng(n)
    for shift in (0.0, 0.3, 0.8):
        d = rng.normal(shift, 1.0, n)
        ours = shift_test(d)
        theirs = wilcoxon(d, alternative="greater", method="exact", zero_method="wilcox")
        assert ours.p_value == pytest.approx(float(theirs.pvalue), rel=1e-9)
        assert ours.above == (ours.p_value <= 0.05)  # the verdict read from the bound is the test's


def test_the_bound_is_the_tests_own_inversion() -> None:
    """Rejecting "shift ≤ θ" (the test of d − θ) happens exactly for θ below the printed bound."""
    rng = np.random.default_rng(11)
    for n in (8, 15, 40):
        d = rng.normal(0.5, 1.0, n)
        lower = shift_test(d).lower
        assert lower is not None
        assert shift_test(d - (lower - 1e-9)).above
        assert not shift_test(d - (lower + 1e-9)).above


def test_zeros_are_dropped_and_too_few_pairs_have_no_bound() -> None:
    four = shift_test([0.1, 0.2, 0.3, 0.4, 0.0, 0.0])
    assert four.n == 6 and four.nonzero == 4 and four.lower is None and four.verdict == "not enough prompts"
    five = shift_test([0.1, 0.2, 0.3, 0.4, 0.5])
    assert five.p_value == pytest.approx(1 / 32) and five.above
    assert shift_test([0.0, 0.0]).verdict == "not enough prompts"
    assert shift_test([math.nan, 0.1, 0.2, 0.3, 0.4, 0.5]).n == 5


def test_the_null_distribution_sums_to_one_and_is_symmetric() -> None:
    for n in (1, 7, 30):
        dist = signed_rank_null(n)
        assert dist.sum() == pytest.approx(1.0)
        assert np.allclose(dist, dist[::-1])


def test_the_normal_approximation_beyond_the_exact_table_agrees_with_scipy() -> None:
    rng = np.random.default_rng(5)
    d = rng.normal(0.1, 1.0, 450)
    ours = shift_test(d)
    assert ours.method == "normal"
    theirs = wilcoxon(d, alternative="greater", method="approx", correction=True)
    assert ours.p_value == pytest.approx(float(theirs.pvalue), rel=0.02)
