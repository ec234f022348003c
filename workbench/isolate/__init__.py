"""`wb isolate`: find the minimal set of config changes that causes a failure, under noise.

`search` holds the algorithm (pure, any oracle); `decision` the per-probe sequential test;
`model` a simulated binomial oracle; `adapter` runs each probe as a recorded execution of a
generated hypothesis through the runner; `records` stores and reads searches; `app` ties them
together for the CLI.
"""

from workbench.isolate.search import ProbeRequest, ProbeResult, SearchResult, factorial, isolate

__all__ = ["ProbeRequest", "ProbeResult", "SearchResult", "factorial", "isolate"]
