"""harness.pipeline sizes have upper bounds: a huge --microbatches is a one-line error, not gigabytes of chunks."""
import pytest

from harness.pipeline.__main__ import main
from harness.pipeline.model import ScheduleError
from harness.pipeline.schedules import BUILDERS, MAX_MICROBATCHES, MAX_PP, MAX_PP_TIMES_MICROBATCHES, check_sizes


@pytest.mark.parametrize("method", list(BUILDERS))
def test_every_builder_refuses_sizes_beyond_the_bounds(method):
    with pytest.raises(ScheduleError, match=f"{method}: microbatches=1000000000; expected <= {MAX_MICROBATCHES}"):
        BUILDERS[method](8, 1_000_000_000)
    with pytest.raises(ScheduleError, match=f"pp={MAX_PP + 2}; expected <= {MAX_PP}"):
        BUILDERS[method](MAX_PP + 2, 2 * MAX_PP + 4)
    with pytest.raises(ScheduleError, match=f"expected <= {MAX_PP_TIMES_MICROBATCHES}"):
        BUILDERS[method](64, 512)
    check_sizes(method, 8, 2048)  # at the bounds: accepted (8 x 2048 = 16384)


def test_cli_refuses_a_billion_microbatches_with_one_line(capsys):
    assert main(["--microbatches", "1000000000"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("harness.pipeline: error: ") and "expected <= 4096" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
