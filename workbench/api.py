"""wb's store as pandas DataFrames, for a notebook: runs, units and verdicts without SQL or the CLI.

    from workbench import api
    runs = api.runs(arms_of="wedge-confound")            # one row per run, the arm the analysis put it in
    runs.groupby("arm")[["metric.leak", "metric.sessions"]].sum()

Columns follow MLflow's `search_runs()` habit: a run's variables are `var.NAME`, its metrics `metric.NAME`,
so a variable and a metric of the same name never collide. Every function opens the workbench as the CLI
does (`db`/`root`, else $WB_DB/$WB_ROOT, else wb.duckdb and the nearest hypotheses.yaml up), read-only.

An entry of hypotheses.yaml with a problem of its own (an unknown field, a duplicate id) is left out of a read
through the registry (`arms_of=`), as the CLI leaves it out: the other entries are read. Every frame says which in
`frame.attrs["broken"]`, a tuple of `workbench.registry.validate.BrokenEntry` (`id`, and `problems`: each a
`workbench.errors.ConfigError` with `file`, `line`, `field`, `message` and `hint`); empty when none was left out or
the read did not go through the registry. The entry asked for by `arms_of=` is itself bad input (ConfigErrors).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas

    from workbench.app import Workbench
    from workbench.registry.validate import BrokenEntry
    from workbench.store.entities import RunRecord

__all__ = ["runs", "units", "verdicts"]

RUN_COLUMNS = ["run_id", "label", "source", "hypothesis", "experiment", "execution_id", "arm", "replicate", "block",
               "status", "host", "started_at", "ended_at"]


def _open(db: str | None, root: str | None) -> "Workbench":
    from workbench.app import Workbench
    from workbench.settings import Settings

    # Errors name what the caller gave: the keyword (db=, root=), or the environment variable, never a flag.
    return Workbench.open(Settings.from_env(db=db, root=root, db_from="db=", root_from="root="))


def _arms(wb: "Workbench", hypothesis_id: str) -> dict[Any, str]:
    """{run id or imported run's label: arm} for the runs the analysis of `hypothesis_id` pools (not recorded)."""
    from workbench.errors import NoEvidence

    try:
        analysis = wb.analyze(hypothesis_id, record=False)
    except NoEvidence:
        return {}
    return {key: arm for arm, keys in analysis.runs.items() for key in keys}


def _left_out(wb: "Workbench") -> "tuple[BrokenEntry, ...]":
    """The entries of hypotheses.yaml `wb`'s reads left out for a problem of their own (none where none was)."""
    apart = wb.left_out()
    return apart.broken if apart is not None else ()


def _framed(frame: "pandas.DataFrame", wb: "Workbench") -> "pandas.DataFrame":
    """`frame`, saying in attrs["broken"] which entries the read left out (the module's docstring)."""
    frame.attrs["broken"] = _left_out(wb)
    return frame


def _selected(wb: "Workbench", hypothesis: str | None, experiment: str | None,
              arms_of: str | None) -> list[tuple["RunRecord", str | None]]:
    """(run, arm) for the runs asked for; with `arms_of`, exactly the runs that analysis uses, with its arms."""
    arm_of = _arms(wb, arms_of) if arms_of else None
    with wb.store(read_only=True) as store:
        records = store.contents().runs
    out = []
    for r in records:
        if hypothesis is not None and r.hypothesis_id != hypothesis:
            continue
        if experiment is not None and r.experiment_id != experiment:
            continue
        if arm_of is None:
            out.append((r, r.arm))
        elif r.id in arm_of or (r.label is not None and r.label in arm_of):
            out.append((r, arm_of.get(r.id) or arm_of.get(r.label)))
    return out


def runs(*, hypothesis: str | None = None, experiment: str | None = None, arms_of: str | None = None,
         db: str | None = None, root: str | None = None) -> "pandas.DataFrame":
    """One row per run (imported evidence included): ids, arm, status, then `var.*` and `metric.*` columns.

    `hypothesis`/`experiment` keep the runs recorded for them; `arms_of="ID"` keeps the runs the analysis of
    hypothesis ID pools, whoever recorded them, with the arm it assigned each (imported runs have no arm of
    their own: the analysis matches them by their variables)."""
    import pandas as pd

    rows = []
    wb = _open(db, root)
    for r, arm in _selected(wb, hypothesis, experiment, arms_of):
        row: dict[str, Any] = {"run_id": r.id, "label": r.label, "source": r.source, "hypothesis": r.hypothesis_id,
                               "experiment": r.experiment_id, "execution_id": r.execution_id, "arm": arm,
                               "replicate": r.replicate, "block": r.block, "status": r.status, "host": r.host,
                               "started_at": r.started_at, "ended_at": r.ended_at}
        row.update({f"var.{k}": v for k, v in sorted(r.variables.items())})
        row.update({f"metric.{k}": v for k, v in sorted(r.metrics.items())})
        rows.append(row)
    df = pd.DataFrame(rows)
    if df.empty:
        return _framed(pd.DataFrame(columns=RUN_COLUMNS), wb)
    rest = sorted(c for c in df.columns if c not in RUN_COLUMNS)
    return _framed(df[RUN_COLUMNS + [c for c in rest if c.startswith("var.")]
                      + [c for c in rest if c.startswith("metric.")]], wb)


def units(*, hypothesis: str | None = None, experiment: str | None = None, arms_of: str | None = None,
          db: str | None = None, root: str | None = None) -> "pandas.DataFrame":
    """One row per run and unit outcome: run_id, label, arm, outcome, units (how many units ended so).
    Imported runs record no units, only metrics: they have no rows here."""
    import pandas as pd

    wb = _open(db, root)
    rows = [{"run_id": r.id, "label": r.label, "arm": arm, "outcome": outcome, "units": n}
            for r, arm in _selected(wb, hypothesis, experiment, arms_of)
            for outcome, n in sorted(r.units.items())]
    return _framed(pd.DataFrame(rows, columns=["run_id", "label", "arm", "outcome", "units"]), wb)


def verdicts(*, hypothesis: str | None = None, latest: bool = False, db: str | None = None,
             root: str | None = None) -> "pandas.DataFrame":
    """One row per recorded verdict (newest last): hypothesis, verdict, created_at, execution_id, mode, reasoning.
    `latest=True` keeps the verdict each hypothesis's status rests on, as `wb hypothesis list` shows it: never an
    A/A (noise-floor) check or a verdict under --set overrides, and an exploratory one only before any
    controlled one (workbench.analysis.status)."""
    import pandas as pd

    from workbench.analysis.status import current_statuses, overrides_by_execution

    wb = _open(db, root)
    with wb.store(read_only=True) as store:
        contents = store.contents()
    records = sorted(contents.verdicts, key=lambda v: v.id)
    if hypothesis is not None:
        records = [v for v in records if v.hypothesis_id == hypothesis]
    if latest:
        statuses = current_statuses({v.hypothesis_id: "open" for v in records}, records,
                                    overrides_by_execution(contents.executions))
        records = sorted((st.verdict for st in statuses.values() if st.verdict is not None), key=lambda v: v.id)
    rows = [{"verdict_id": v.id, "hypothesis": v.hypothesis_id, "verdict": v.verdict, "created_at": v.created_at,
             "execution_id": v.execution_id, "mode": v.details.get("mode"), "reasoning": v.reasoning} for v in records]
    return _framed(pd.DataFrame(rows, columns=["verdict_id", "hypothesis", "verdict", "created_at", "execution_id",
                                               "mode", "reasoning"]), wb)
