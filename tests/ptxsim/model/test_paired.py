"""The published paired rows: at least 15, each with a source, two known variants and a ratio of its two figures;
every pair documented in docs/model-validation.md; the variant kernels run on ptxsim and model the effect they
exist to show (a bank-conflicted transpose is slower, a dependent chain takes more clocks per instruction)."""
from pathlib import Path

import pytest

from harness.static import analyse_ptx
from ptxsim.model.microbench import run_on_sim
from ptxsim.model.paired import PAIRS, VARIANTS, validate_pairs, variant_bench
from ptxsim.model.published import PREDICTED

DOC = Path(__file__).resolve().parents[3] / "docs" / "model-validation.md"


def test_at_least_15_predicted_pairs_each_sourced_and_documented():
    doc = DOC.read_text()
    assert len({p.name for p in PAIRS}) == len(PAIRS) >= 15
    for pair in PAIRS:
        assert pair.numerator in VARIANTS and pair.denominator in VARIANTS and pair.numerator != pair.denominator
        assert pair.source.startswith("[S") and pair.conditions and min(pair.figures) > 0
        assert pair.value == pytest.approx(pair.figures[0] / pair.figures[1]) and pair.role == PREDICTED
        assert f"`{pair.name}`" in doc, f"{pair.name} has no entry in docs/model-validation.md"


def test_transpose_pair_models_the_bank_conflicts():
    basic, padded = (run_on_sim(variant_bench(v), "H100 SXM", None, analyse_ptx)
                     for v in ("transpose_basic", "transpose_padded"))
    assert basic.quantity < 0.8 * padded.quantity
    assert basic.kernel_limiters == ("shared",) and padded.kernel_limiters == ("dram",)


def test_ilp_pair_row_is_a_ratio_of_clocks_per_instruction():
    (row,) = validate_pairs(names=["ilp_fma_1_vs_4"], static_facts=analyse_ptx)
    assert row.modelled > 2.0 and row.error_ratio == pytest.approx(row.modelled / row.published)
    assert row.same_limiter and row.limiters == ("issue", "issue")
