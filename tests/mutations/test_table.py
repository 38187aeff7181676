"""The mutation suite's table and page (fast; the suite itself is `make mutations`): every mutation applies to the
committed PTX exactly as written, each Hopper rung has at least 25 across the fault classes, docs/mutations.md lists
exactly the table's mutants, a stale edit is an error, a hang is the instruction budget (not the wall clock), and a
smoke run of three mutants is caught while the unmutated rung 4 runs clean, well inside the budget."""
import re

import pytest

from tests.mutations import report
from tests.mutations.edits import Edit, MutationError, apply_edits, delete
from tests.mutations.suite import BACKSTOP_S, BUDGET, BUDGET_MARGIN, RUNGS, mutated_ptx, run, run_by_name, target
from tests.mutations.table import CLASSES, MUTATIONS


def test_every_mutation_applies_exactly_and_changes_only_its_entry():
    for m in MUTATIONS:
        t = target(m.rung)
        out = mutated_ptx(m)
        assert out != t.ptx, m.name
        start = t.ptx.index(f".visible .entry {t.entry}(")
        assert out[:start] == t.ptx[:start], m.name  # the header and earlier entries untouched


def test_each_hopper_rung_has_25_mutations_across_the_classes():
    names = [m.name for m in MUTATIONS]
    assert len(names) == len(set(names))
    assert all(re.fullmatch(rf"r{m.rung}-[a-z0-9-]+", m.name) and m.cls in CLASSES and m.why for m in MUTATIONS)
    for rung in RUNGS:
        classes = {m.cls for m in MUTATIONS if m.rung == rung}
        assert sum(m.rung == rung for m in MUTATIONS) >= 25, rung
        assert {"wgmma-fence", "wait-group", "acc-read", "alignment", "release-early"} <= classes, rung
        if rung >= 3:  # the mbarrier rungs
            assert {"retry", "wait-order", "expect-tx", "parity", "mbarrier-init", "barrier-count"} <= classes
        if rung >= 4:
            assert "setmaxnreg" in classes
    assert {"cluster-barrier", "peer-release"} <= {m.cls for m in MUTATIONS if m.rung == 5}
    assert "proxy-fence" in {m.cls for m in MUTATIONS if m.rung == 2}
    assert set(CLASSES) == {m.cls for m in MUTATIONS}  # no class without a mutant


def test_a_mutation_that_no_longer_applies_is_an_error():
    t = target(4)
    with pytest.raises(MutationError, match="matched 1 time.*expected 2"):
        apply_edits(t.ptx, t.entry, (delete(r"wgmma\.fence\.sync\.aligned;", 2),), "stale")
    with pytest.raises(MutationError, match="matched 0 time"):
        apply_edits(t.ptx, t.entry, (Edit(r"no such instruction;", ""),), "gone")
    with pytest.raises(MutationError, match="not in the module"):
        apply_edits(t.ptx, "no_such_entry", (), "entry")


def test_the_docs_page_lists_exactly_the_table():
    rows = report.read_rows(report.DOC.read_text())
    assert {name: (rung, cls) for name, (rung, cls, _) in rows.items()} == \
        {m.name: (m.rung, m.cls) for m in MUTATIONS}
    text = report.DOC.read_text()
    assert all(f"| {r} | clean |" in text for r in RUNGS)  # the unmutated rungs came out clean


@pytest.mark.sim
def test_smoke_three_mutants_are_caught_and_the_clean_rung_is_clean(seed):
    """One deadlock (a full barrier waiting for 16 bytes that never come), one asynccheck finding (accumulators read
    before wgmma.wait_group) and one racecheck finding (a slab read before cp.async.wait_group covers it)."""
    assert run_by_name("r3-expect-tx-plus16", seed).caught[:1] == ("deadlock",)
    assert "asynccheck" in run_by_name("r4-acc-read-before-wait", seed).caught
    assert "racecheck" in run_by_name("r2-no-cp-wait", seed).caught
    clean = run(4, None, seed)
    assert clean.silent and clean.detail == "", clean
    assert 0 < clean.warp_instructions * BUDGET_MARGIN <= BUDGET  # the hang budget's margin (suite.py)


def test_a_hang_is_the_instruction_budget_and_the_wall_clock_is_not_a_catch():
    """Outcomes must not depend on the machine's load: a launch past its warp-instruction budget is a `hang`; one the
    wall-clock backstop stops is `wall-clock`, which __main__ reports as a failure."""
    from ptxsim import errors
    from tests.mutations.suite import WALL_CLOCK, _backend, _exception_mechanism

    assert _exception_mechanism(errors.InstructionBudgetExceeded("k ran more than 5 warp-instructions")) == "hang"
    assert _exception_mechanism(errors.TimeLimitExceeded("k ran longer than its 1800 s")) == WALL_CLOCK
    backend = _backend("", None)
    assert backend.budget == BUDGET and backend.time_limit == BACKSTOP_S and BACKSTOP_S >= 600
