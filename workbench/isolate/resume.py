"""`wb isolate --resume`: find the earlier attempt of the same search, and what of it can be reused.

A search is determined by its experiment, target, metric, failure region, good and bad configs (and
the variables held), alpha, budget and seed: given those, every probe's request (its config, alpha
and units) and its execution seed (the search's seed + its index) follow, and a probe's runs on a
deterministic target (pdsim on simulated time) give the same counts again. So a resumed search asks
the same probes in the same order; each one an earlier attempt ran to its end (its verdict recorded,
decided or not: run again, it would end the same way) is read back from the store instead of run
again, and the probe that was in flight
is continued by the runner's own `--resume` (its finished runs kept, the interrupted one run again with
the same replicate seed). The resumed search keeps the earlier attempt's id, so its probes keep their
hypothesis ids and their executions. Nothing is reused unless what decided it is unchanged: a flag that
differs, or an experiment or profile edited since a reused probe ran, is refused before anything runs.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from workbench.errors import BadInput
from workbench.store.engine import url_for_command, url_has_password
from workbench.isolate.assignments import shown, shown_set
from workbench.isolate.attempt import DecidedProbe, PriorAttempt
from workbench.runner.search_command import flag_number

if TYPE_CHECKING:
    from workbench.isolate.adapter import IsolateSpec
    from workbench.isolate.records import StoredSearch
    from workbench.registry.folder import Registry
    from workbench.settings import Settings
    from workbench.store.engine import Store

FINISHED = ("decided", "no-failure", "inconclusive")  # a search that ended by its own rule, not stopped
SHOWN = 5


def differences(spec: "IsolateSpec", record: dict[str, Any], *, seed_given: bool, parent_given: bool) -> list[str]:
    """What this request sets otherwise than the stored search `record`, by flag ([] when it is the same search)."""
    from workbench.isolate.region import stored_text
    from workbench.registry.common import region_text

    res = record.get("result", {})
    budget = res.get("budget")
    out: list[str] = []

    def differ(flag: str, now: Any, then: Any) -> None:
        if now != then:
            out.append(f"{flag} {_show(now)} (it used {_show(then)})")

    differ("--experiment", spec.experiment, record.get("experiment"))
    differ("--target", spec.profile, record.get("profile"))
    differ("--metric", spec.metric, record.get("metric"))
    differ("--region", region_text(spec.region), stored_text(record.get("region")))
    for flag, now, then in (("--good", spec.good, record.get("good") or {}),
                            ("--bad", spec.bad, record.get("bad") or {})):
        out += [f"{flag} {shown(v, _show(now.get(v)))} (it used {shlex.quote(_show(then.get(v)))})"
                for v in dict.fromkeys([*now, *then]) if now.get(v) != then.get(v)]
    if "hold" in record and dict(spec.hold) != record["hold"]:
        out.append(f"variables held at the good value: {_set(spec.hold)} (it held {_set(record['hold'])})")
    differ("--alpha", spec.alpha, res.get("alpha"))
    differ("--budget", spec.budget, math.inf if budget is None else budget)
    if seed_given:
        differ("--seed", spec.seed, record.get("seed"))
    if parent_given:
        differ("--parent", spec.parent, record.get("parent"))
    return out


def find_attempt(store: "Store", spec: "IsolateSpec", *, seed_given: bool,
                 parent_given: bool) -> tuple["IsolateSpec", PriorAttempt]:
    """The earlier, unfinished attempt of this search, and the spec that continues it (its id, seed and
    parent); BadInput naming the flag when there is none, it finished, or the nearest one differs."""
    attempts = [st for st in _attempts(store) if st.record.get("experiment") == spec.experiment]
    same = [st for st in attempts
            if not differences(spec, st.record, seed_given=seed_given, parent_given=parent_given)]
    open_ = [st for st in same if st.status not in FINISHED]
    if open_:
        st = open_[0]
        rec = st.record
        spec = replace(spec, search_id=st.search_id, seed=int(rec["seed"]), parent=rec.get("parent"))
        return spec, PriorAttempt(st.search_id, st.created_at, st.status, decided_probes(store, st.search_id),
                                  rec.get("pending"))
    if same:
        st = same[0]
        raise BadInput(f"--resume: search {st.search_id} with these flags already finished ({st.status}) at "
                       f"{st.created_at}; there is nothing to resume",
                       hint="its answer is on the Isolate page of wb report; drop --resume to search afresh")
    stopped = [st for st in attempts if st.status not in FINISHED]
    if stopped:
        st = stopped[0]
        diff = differences(spec, st.record, seed_given=seed_given, parent_given=parent_given)
        more = f" (and {len(diff) - SHOWN} more)" if len(diff) > SHOWN else ""
        raise BadInput(f"--resume: the last stopped search of {spec.experiment!r}, {st.search_id} "
                       f"({st.created_at}), was another search: " + "; ".join(diff[:SHOWN]) + more
                       + ". Nothing was run",
                       hint="give the flags it was started with (its stop printed the command), "
                            "or drop --resume to start this search afresh")
    last = f" (every search of it here finished; the last, {attempts[0].search_id}, at {attempts[0].created_at})" \
        if attempts else ""
    raise BadInput(f"--resume: no stopped search of {spec.experiment!r} in this store to resume{last}",
                   hint="drop --resume to start the search (check --db if it ran against another store)")


def _attempts(store: "Store") -> list["StoredSearch"]:
    """The newest attempt of each search, newest first; a search killed outright before it recorded itself
    (SIGKILL, a lost machine) is known from the key its probes' verdicts carry, as a "killed" attempt."""
    from workbench.isolate.records import StoredSearch, latest_searches

    from workbench.runner.resume import RESUMABLE

    stored = latest_searches(store)
    known = {st.search_id for st in stored}
    killed: dict[str, StoredSearch] = {}

    def found(key: Any, created_at: str | None) -> None:
        if isinstance(key, dict) and key.get("search_id") and key["search_id"] not in known:
            result = {"status": "killed", "alpha": key.get("alpha"), "budget": key.get("budget"), "probes": []}
            killed.pop(key["search_id"], None)
            killed[key["search_id"]] = StoredSearch(key["search_id"], key["root_id"], created_at,
                                                    {**key, "result": result})

    # A probe's execution carries the key from its start (killed in the first probe: no verdict yet) ...
    for ex in store.executions():
        if ex.hypothesis_id.startswith("iso-") and ex.status in RESUMABLE:
            found(((ex.plan or {}).get("origin") or {}).get("isolate"), ex.started_at)
    # ... and each probe's verdict once it is decided.
    for v in store.verdicts(prefix="iso-"):
        found(v.details.get("search_key") if v.details.get("kind") == "isolate-probe" else None, v.created_at)
    both = sorted([*stored, *killed.values()], key=lambda st: st.created_at or "")
    return list(reversed(both))


def decided_probes(store: "Store", search_id: str) -> dict[int, DecidedProbe]:
    """Every probe of the search that ran to its end, by index, from the verdict each one records as it ends
    (not from the search's record: an attempt killed outright records no search, but its probes' verdicts)."""
    out: dict[int, DecidedProbe] = {}
    for v in store.verdicts(prefix=f"iso-{search_id}-p"):
        d = v.details
        if d.get("kind") == "isolate-probe" and d.get("search") == search_id and v.execution_id is not None:
            req = d["request"]
            out[int(req["index"])] = DecidedProbe(req, d["outcome"], float(d["k"]), float(d["n"]), int(v.execution_id))
    return out


def check_unchanged(spec: "IsolateSpec", registry: "Registry", store: "Store", prior: PriorAttempt,
                    sim_dir: Any = None) -> None:
    """Refuse (BadInput, nothing run) when a probe to be reused or continued ran under another definition
    of the experiment or its profile than the one in the files now: its runs would not be this search's."""
    from workbench.isolate.adapter import probe_hypothesis
    from workbench.isolate.search import ProbeRequest
    from workbench.runner.execute import RunOptions, prepare
    from workbench.runner.resume import changes_since, find_resumable

    hypotheses: list[Any] = []
    requests = [(p.request, p.execution_id) for _, p in sorted(prior.decided.items())]
    for d, execution_id in requests + ([(prior.pending, None)] if prior.pending else []):
        req = ProbeRequest(**{k: (tuple(d[k]) if k == "applied" else d[k]) for k in ProbeRequest.__dataclass_fields__})
        parent = spec.root_id if req.parent is None else spec.probe_id(req.parent)
        h = probe_hypothesis(spec, req, parent)
        hypotheses.append(h)
        ex = find_resumable(store, h.id) if execution_id is None else store.execution(execution_id)
        if ex is None:
            continue
        reg = replace(registry, hypotheses=[*registry.hypotheses, *hypotheses])
        opts = RunOptions(target=spec.profile, replicates=1, sequential=True, seed=spec.probe_seed(req.index),
                          show_progress=False)
        changed = changes_since(store, ex, prepare(reg, h.id, opts, sim_dir=sim_dir).prepared)
        if changed:
            more = f" (and {len(changed) - SHOWN} more)" if len(changed) > SHOWN else ""
            raise BadInput(f"--resume: probe {req.index} of search {spec.search_id} (execution {ex.id}) ran with "
                           "another definition; changed since: " + "; ".join(changed[:SHOWN]) + more
                           + ". Nothing was run",
                           hint="undo the edit to resume the search, or drop --resume to search afresh with it")


def resume_command(spec: "IsolateSpec", settings: "Settings | None" = None, write: bool = False, *,
                   store: Any = None, root: Any = None) -> str:
    """The command that resumes `spec`'s search: every flag that determines it, explicitly, --db and --root (the
    `store` and the registry's `root` the search ran with, absolutely, as a run's resume command has them; else as
    `settings` has them: a search given no --root gave none, and its command depended on the folder it was pasted
    in), the `--write` the stopped search was given, then --resume (`runner.search_command`)."""
    from workbench.isolate.adapter import search_key
    from workbench.runner.search_command import search_command

    if store is not None and root is not None:
        from workbench.runner.takeover import store_and_root

        return search_command(search_key(spec), store_and_root(store.url, store.path, root), write=write)
    return search_command(search_key(spec), _where(settings), write=write)


def _where(settings: "Settings | None") -> list[str]:
    """--db and --root as this command had them, a path made absolute (as wb read it, from the folder it ran in), so
    that the command works pasted in any folder; a store URL's password is masked (`url_for_command`), for the user
    to put back."""
    from pathlib import Path

    if settings is None:
        return []
    out: list[str] = []
    if settings.db:
        out += ["--db", (url_for_command(settings.db) if url_has_password(settings.db) else settings.db)
                if "://" in settings.db else str(Path(settings.db).expanduser().resolve())]
    if settings.root:
        out += ["--root", str(Path(settings.root).expanduser().resolve())]
    return out


def _set(d: dict[str, Any]) -> str:
    return shown_set(d, d)


def _show(value: Any) -> str:
    if isinstance(value, float):
        return "none" if math.isinf(value) else flag_number(value)
    return "none" if value is None else str(value)
