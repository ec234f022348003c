"""What a bundle carries (`wb bundle show`), and its hypotheses and experiments written out into a new folder
(`--extract DIR`), from which a teammate's empty workbench can take the bundle."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import BadInput
from workbench.team.bundle import HYPOTHESIS_KEYS, EXPERIMENT_KEYS, _declared

if TYPE_CHECKING:
    from workbench.registry.folder import Registry

ROW_KINDS = ("executions", "runs", "verdicts", "reviews", "artifact_blobs")


@dataclass(frozen=True)
class Carried:
    """A bundle's header, its definitions (each with how this workbench's of the same id compares: same,
    differs, absent), its row counts, and the files `--extract` wrote (with the profiles it left out)."""

    path: str
    created_by: str
    created_at: str
    wb_version: str
    hypotheses: list[dict[str, Any]]
    experiments: list[dict[str, Any]]
    rows: dict[str, int]
    written: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "created_by": self.created_by, "created_at": self.created_at,
                "wb_version": self.wb_version, "hypotheses": self.hypotheses, "experiments": self.experiments,
                "rows": self.rows, "written": self.written, "left_out": self.left_out}


def _here(local: Any, body: dict[str, Any], keys: tuple[str, ...]) -> str:
    if local is None:
        return "absent"
    mine = _declared(local)
    return "same" if all(mine.get(k) == body.get(k) for k in keys) else "differs"


def carried(registry: "Registry", doc: dict[str, Any], path: Path) -> Carried:
    reg = doc["registry"]
    local_h = {h.id: h for h in registry.hypotheses}
    hyps = [{"id": hid, "experiment": body.get("experiment"), "here": _here(local_h.get(hid), body, HYPOTHESIS_KEYS),
             "claim": body.get("claim")} for hid, body in reg["hypotheses"].items()]
    exps = []
    for eid, body in reg["experiments"].items():
        mine = registry.experiments.get(eid)
        same_version = mine if mine is not None and mine.version == body.get("version") else None
        here = "absent" if mine is None else (_here(same_version, body, EXPERIMENT_KEYS) if same_version
                                              else f"version {mine.version} here")
        exps.append({"id": eid, "version": body.get("version"), "here": here})
    store = doc.get("store") if isinstance(doc.get("store"), dict) else {}
    return Carried(str(path), str(doc.get("created_by", "")), str(doc.get("created_at", "")),
                   str(doc.get("wb_version", "")), hyps, exps,
                   {k: len(store.get(k) or []) for k in ROW_KINDS})


def extract(doc: dict[str, Any], out: Path, shown: Carried) -> Carried:
    """Write the bundle's definitions into the new folder `out` (hypotheses.yaml, experiments/ID.yaml); refused
    when `out` holds anything (a user's file is never overwritten). A profile whose config names a template_file
    is left out: the bundle carries the definitions, not the template files beside them."""
    import yaml

    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise BadInput(f"--extract {out}: {'it holds files' if out.is_dir() else 'it is a file'}; the bundle's "
                       "definitions go into a new or empty folder only", where="--extract",
                       hint="name a new folder, then copy what you want from it into your workbench")
    if not out.parent.is_dir():
        raise BadInput(f"--extract {out}: the folder {out.parent} does not exist", where="--extract")
    left_out: list[str] = []
    experiments = {eid: _runnable(eid, dict(body), left_out) for eid, body in doc["registry"]["experiments"].items()}
    (out / "experiments").mkdir(parents=True, exist_ok=True)
    written = []
    hyps = _linked(doc["registry"]["hypotheses"], left_out)
    (out / "hypotheses.yaml").write_text(yaml.safe_dump({"format": 1, "hypotheses": hyps}, sort_keys=False))
    written.append(str(out / "hypotheses.yaml"))
    for eid, body in experiments.items():
        target = out / "experiments" / f"{eid}.yaml"
        target.write_text(yaml.safe_dump({"format": 1, **body}, sort_keys=False))
        written.append(str(target))
    return Carried(**{**shown.__dict__, "written": written, "left_out": left_out})


def _linked(hypotheses: dict[str, Any], left_out: list[str]) -> list[dict[str, Any]]:
    """The hypotheses, without a parent link to one the bundle does not carry (noted in `left_out`)."""
    out = []
    for hid, body in hypotheses.items():
        body = dict(body)
        parent = body.get("parent")
        if parent is not None and parent not in hypotheses:
            del body["parent"]
            left_out.append(f"hypothesis {hid}: its parent {parent} is not in the bundle (the link)")
        out.append(body)
    return out


def _runnable(eid: str, body: dict[str, Any], left_out: list[str]) -> dict[str, Any]:
    """The experiment without the profiles whose template file the bundle does not carry (noted in `left_out`)."""
    body.pop("format", None)
    profiles = dict(body.get("profiles") or {})
    for name, prof in list(profiles.items()):
        template = ((prof or {}).get("config") or {}).get("template_file")
        if template:
            del profiles[name]
            left_out.append(f"experiment {eid} profile {name}: its config's template_file {template} is not in "
                            "the bundle")
    body["profiles"] = profiles
    if body.get("default_profile") not in profiles:
        body.pop("default_profile", None)
        if profiles:
            body["default_profile"] = next(iter(profiles))
    return body
