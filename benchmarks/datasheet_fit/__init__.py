"""Fit the datasheet defaults (advisor/model/cost/enginecost.py, `DEFAULT_*`) to published vLLM measurements, and write
docs/datasheet-fit.md: every row of ../shared/reference/gpu-measurements.md the model can express, published vs
predicted, its error, the leave-one-source-out error, the rows it cannot express and why, and the issue-13 checks.

    python -m benchmarks.datasheet_fit                 # fit, leave-one-source-out, checks; writes docs/datasheet-fit.md
    python -m benchmarks.datasheet_fit --quick         # no leave-one-source-out; prints, writes nothing
    python -m benchmarks.datasheet_fit --all-rows      # fit every expressed row, in both stages (prints only)
    python -m benchmarks.datasheet_fit --fits F.json   # keep the fits in F.json; rerun with it to rewrite the doc
                                                       # after DEFAULT_* move, without refitting (~20 min saved)

Every prediction is the repo's own model (`step_time`, `prefill_time`, `Setup`, `request_times`), with an EngineCost
built from the hardware datasheet and the parameters being fitted. The fit is the one `specadvisor calibrate` uses
(calibration/calibrate/fit.py: `scipy.optimize.least_squares`, residual log(predicted / published), soft-L1 loss at
LOSS_SCALE, gross outliers dropped by `outliers` and the fit redone), plus a weak prior on every parameter so that one
no fitted row sees stays where it was (a one-sigma move costs as much as a PRIOR_WEIGHT miss on one row). It is
fitted in two stages (`fit_stages`) on `FITTED`'s sources; the others are predicted out of sample. Engines older than
vLLM 0.32 (its V1 model runner) ran their speculative bookkeeping synchronously and their draft passes piecewise
(`Setup.async_scheduling`, `Setup.drafter_graphs`). Request-level rows are evaluated as the source measured them;
every length the source does not give is an assumption, printed next to its row.

One module per concern: `sources` (the GPUs, models and numbers the sources published), `params` (the parameters and
how they build an EngineCost), `predict` (the model of a row), `row`, `rows` and `moe_rows` (the rows),
`not_expressed`, `fit` (the fit and its leave-one-source-out), `checks` and `report` (docs/datasheet-fit.md);
`__main__` runs them.
"""

from .fit import extrapolated, fit_stages, leave_one_source_out, median_abs, predictions
from .params import PARAMS, PRIORS, SHIPPED, engine_cost
from .row import Row
from .rows import rows
from .sources import DOC, FITTED, H100, ROOT, VLLM_V1

__all__ = [
           "DOC",
           "FITTED",
           "H100",
           "PARAMS",
           "PRIORS",
           "ROOT",
           "SHIPPED",
           "VLLM_V1",
           "Row",
           "engine_cost",
           "extrapolated",
           "fit_stages",
           "leave_one_source_out",
           "median_abs",
           "predictions",
           "rows",
]
