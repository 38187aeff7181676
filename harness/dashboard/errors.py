"""The dashboard's one exception (kept apart so `import harness.dashboard` stays light)."""
from harness.errors import PtxmoeError


class DashboardError(PtxmoeError):
    """A run folder the dashboard cannot be built from (missing or wrong run.json, unwritable output)."""
