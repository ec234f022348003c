"""`wb isolate`: find the minimal set of config changes that causes a failure, under noise.

`search` holds the algorithm (pure, any oracle); `decision` the per-probe sequential test;
`model` a simulated binomial oracle; `adapter` runs each probe as a recorded execution of a
generated hypothesis through the runner (`execute` with the probe's own stopping rule); `records`
stores and reads searches through the `Store`; `resume` finds the stopped attempt a `--resume`
continues; `app` checks a request and runs the search, for `Workbench.isolate`, which the CLI calls
and formats.
"""

from workbench.isolate.search import ProbeRequest, ProbeResult, SearchResult, factorial, isolate

__all__ = ["ProbeRequest", "ProbeResult", "SearchResult", "factorial", "isolate"]
