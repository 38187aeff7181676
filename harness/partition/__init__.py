"""The 20-of-132-SMs experiment (issue #9): communication kernels on N SMs next to the grouped GEMM on the rest.

    from harness.partition import PartitionSettings, run_sweep, write_doc
    doc = run_sweep(PartitionSettings(backend="sim"))          # modelled: ptxsim counters + ptxsim.model
    write_doc(doc, "profiles")                                 # profiles/<run-id>/partition.json

Modules: problem (shapes, inputs, references, checks of the comm kernels), counters (simulate and scale),
interference (the model assumptions, as a table), model (modelled rows), measure (gpu rows, CUDA events on two
streams), sweep (settings and the document), report (text tables), figures (plotly).
Heavy imports (ptxsim, numba, plotly) happen inside functions.
"""
from harness.partition.counters import DEFAULT_SERIES, KernelCounters, PartitionError, SimSizes, parse_series
from harness.partition.interference import CONSTANTS, LOAD_POLICIES, MODEL_NOTE, LoadPolicy
from harness.partition.problem import CommShapes
from harness.partition.sweep import DEFAULT_SMS, DOC_FILE, PartitionSettings, load_doc, parse_sms, run_sweep, write_doc

__all__ = [
    "CONSTANTS", "DEFAULT_SERIES", "DEFAULT_SMS", "DOC_FILE", "LOAD_POLICIES", "MODEL_NOTE", "CommShapes",
    "KernelCounters", "LoadPolicy", "PartitionError", "PartitionSettings", "SimSizes", "load_doc", "parse_series",
    "parse_sms", "run_sweep", "write_doc",
]
