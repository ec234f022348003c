"""What a bundle carries (`wb bundle show`), and its hypotheses and experiments written out into a new folder
(`--extract DIR`), from which a teammate's empty workbench can take the bundle."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import BadInput
from workbench.team.bundle import HYPOTHESIS_KEYS, EXPERIMENT_KEYS, _declared
from workbench.team.sources import defines, indented, masked, masked_as_defined, parsed_entry, without_parent

if TYPE_CHECKING:
    from workbench.registry.folder import Registry

ROW_KINDS = ("executions", "runs", "verdicts", "reviews", "artifact_blobs")


@dataclass(frozen=True)
class Carried:
    """A bundle's header, its definitions (each with how this workbench's of the same id compares: same,
    differs, absent), its row counts, and the files `--extract` wrote (with the profiles it left out, and the
    definitions it wrote from parsed data: their comments are lost)."""

    path: str
    created_by: str
    created_at: str
    wb_version: str
    hypotheses: list[dict[str, Any]]
    experiments: list[dict[str, Any]]
    rows: dict[str, int]
    written: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    parsed: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "created_by": self.created_by, "created_at": self.created_at,
                "wb_version": self.wb_version, "hypotheses": self.hypotheses, "experiments": self.experiments,
                "rows": self.rows, "written": self.written, "left_out": self.left_out, "parsed": self.parsed}


def _here(local: Any, body: dict[str, Any], keys: tuple[str, ...], *, workbench: bool = True) -> str:
    if not workbench:
        return "no workbench"
    if local is None:
        return "absent"
    mine = _declared(local)
    return "same" if all(mine.get(k) == body.get(k) for k in keys) else "differs"


def carried(registry: "Registry | None", doc: dict[str, Any], path: Path) -> Carried:
    """The bundle's header, definitions and row counts; each definition compared with `registry`'s, or "no
    workbench" where there is none to compare with (wb run outside any workbench)."""
    reg = doc["registry"]
    here_too = registry is not None
    local_h = {h.id: h for h in registry.hypotheses} if registry is not None else {}
    hyps = [{"id": hid, "experiment": body.get("experiment"),
             "here": _here(local_h.get(hid), body, HYPOTHESIS_KEYS, workbench=here_too),
             "claim": body.get("claim")} for hid, body in reg["hypotheses"].items()]
    exps = []
    for eid, body in reg["experiments"].items():
        mine = registry.experiments.get(eid) if registry is not None else None
        same_version = mine if mine is not None and mine.version == body.get("version") else None
        here = ("no workbench" if not here_too else "absent" if mine is None else
                _here(same_version, body, EXPERIMENT_KEYS) if same_version else f"version {mine.version} here")
        exps.append({"id": eid, "version": body.get("version"), "here": here})
    store = doc.get("store") if isinstance(doc.get("store"), dict) else {}
    return Carried(str(path), str(doc.get("created_by", "")), str(doc.get("created_at", "")),
                   str(doc.get("wb_version", "")), hyps, exps,
                   {k: len(store.get(k) or []) for k in ROW_KINDS})


def extract(doc: dict[str, Any], out: Path, shown: Carried) -> Carried:
    """Write the bundle's definitions into the new folder `out` (hypotheses.yaml, experiments/ID.yaml and the template
    files their profiles render); refused when `out` holds anything (a user's file is never overwritten). Each is
    written as the text the bundle carries (comments kept) where it has it, else from its parsed data (a bundle of an
    older wb), which `parsed` names. A profile whose template file the bundle lacks is left out."""
    import yaml

    from workbench.secrets import mask_profiles, redact

    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise BadInput(f"--extract {out}: {'it holds files' if out.is_dir() else 'it is a file'}; the bundle's "
                       "definitions go into a new or empty folder only", where="--extract",
                       hint="name a new folder, then copy what you want from it into your workbench")
    if not out.parent.is_dir():
        raise BadInput(f"--extract {out}: the folder {out.parent} does not exist", where="--extract")
    sources = doc.get("sources") or {}
    left_out: list[str] = []
    parsed: list[str] = []
    (out / "experiments").mkdir(parents=True, exist_ok=True)
    written = [_write(out / "hypotheses.yaml", _hypotheses_file(doc["registry"]["hypotheses"],
                                                               sources.get("hypotheses") or {}, left_out, parsed))]
    templates = _templates(doc["registry"]["experiments"], sources.get("templates") or {}, out, left_out)
    written += [str(p) for p in templates.values()]
    for eid, body in doc["registry"]["experiments"].items():
        target = out / "experiments" / f"{eid}.yaml"
        text = (sources.get("experiments") or {}).get(eid)
        kept = _runnable(eid, mask_profiles(redact(dict(body))), set(templates), set(sources.get("templates") or {}),
                         left_out)
        why = "the bundle carries no text of it" if text is None else \
            f"its text in the bundle is not the file of {eid}" if not defines(text, "experiment", eid) else \
            "its text, masked, would say something else" if (text := masked_as_defined(text, "profiles")) is None else \
            "a profile of it is left out" if _names(kept.get("profiles")) != _names(body.get("profiles")) else None
        if why is not None:
            parsed.append(f"experiment {eid}: {why}")
            text = yaml.safe_dump({"format": 1, **kept}, sort_keys=False)
        written.append(_write(target, text))
    return Carried(**{**shown.__dict__, "written": written, "left_out": left_out, "parsed": parsed})


def _names(profiles: Any) -> Any:
    return set(profiles) if isinstance(profiles, dict) else profiles


def _write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def _hypotheses_file(hypotheses: dict[str, Any], texts: dict[str, str], left_out: list[str],
                     parsed: list[str]) -> str:
    """hypotheses.yaml of the entries (`_entries`); of their parsed data alone where the texts, each the entry of
    its id alone, do not read so together (a bundle is anyone's file)."""
    import yaml

    notes: list[str] = []
    lost: list[str] = []
    text = "format: 1\nhypotheses:\n" + "\n".join(indented(e) for e in _entries(hypotheses, texts, lost, notes))
    try:
        ids = [h.get("id") for h in yaml.safe_load(text)["hypotheses"]]
    except (yaml.YAMLError, TypeError, KeyError, AttributeError):
        ids = None
    if ids != list(hypotheses):
        notes, lost = [f"hypothesis {hid}: the texts the bundle carries do not read together" for hid in hypotheses], []
        text = "format: 1\nhypotheses:\n" + "\n".join(indented(e) for e in _entries(hypotheses, {}, lost, []))
    left_out.extend(lost)
    parsed.extend(notes)
    return text


def _entries(hypotheses: dict[str, Any], texts: dict[str, str], left_out: list[str],
             parsed: list[str]) -> list[str]:
    """Each hypothesis's entry: its text as written, else its parsed data (noted in `parsed`); without a parent
    link to one the bundle does not carry (noted in `left_out`). Each masked as export masks it: a bundle of a wb
    older than its masking holds a token as written."""
    from workbench.secrets import redact

    out = []
    for hid, body in hypotheses.items():
        text = texts.get(hid)
        why = "the bundle carries no text of it"
        if text is not None and not defines(text, "hypothesis", hid):
            text, why = None, f"its text in the bundle is not the entry of {hid}"
        elif text is not None and (text := masked_as_defined(text, None)) is None:
            why = "its text, masked, would say something else"
        parent = body.get("parent")
        if parent is not None and parent not in hypotheses:
            body = {k: v for k, v in body.items() if k != "parent"}
            if text is not None:
                text, why = without_parent(text), "its text's parent could not be set to null"
            left_out.append(f"the link of hypothesis {hid} to its parent {parent}, which is not in the bundle "
                            "(written with parent: null)")
        if text is None:
            parsed.append(f"hypothesis {hid}: {why}")
            text = parsed_entry(redact(body))
        out.append(text)
    return out


def _templates(experiments: dict[str, Any], texts: dict[str, str], out: Path, left_out: list[str]) -> dict[str, Path]:
    """Write the template files the bundle carries that its experiments' profiles name, beside the experiment files
    as the profiles name them; {template_file: path written}. Not written (a bundle is anyone's file): one whose name
    leads out of `out`'s experiments folder or names no file in it; one at the folder's top named as wb's experiment
    files are (`planted.yaml`: wb would load it as an experiment the bundle does not list); and one whose path is
    that of another file written (an experiment file, an earlier template) or of a folder of one, or lies below
    one."""
    from workbench.registry.folder import EXPERIMENT_FILES

    folder, root = out / "experiments", (out / "experiments").resolve()
    taken = {(folder / f"{eid}.yaml").resolve() for eid in experiments} | {(out / "hypotheses.yaml").resolve()}
    written: dict[str, Path] = {}
    for name in sorted({t for body in experiments.values() for t in _template_files(body)} & set(texts)):
        path = folder / name
        full = path.resolve() if "\x00" not in name else root  # a NUL is in no file name
        if not full.is_relative_to(root):
            left_out.append(f"template file {name}: it lies outside the experiments folder")
            continue
        if full == root:
            left_out.append(f"template file {name!r}: it names no file in the experiments folder")
            continue
        if full.parent == root and full.match(EXPERIMENT_FILES):
            left_out.append(f"template file {name}: it would be read as an experiment definition (wb loads every "
                            f"{EXPERIMENT_FILES} at the top of the experiments folder as one)")
            continue
        other = next((p for p in sorted(taken) if p == full or p.is_relative_to(full) or full.is_relative_to(p)),
                     None)
        if other is not None:
            left_out.append(f"template file {name}: its path is that of {other.relative_to(out.resolve())} also "
                            "written, or of a folder of it, or lies below it")
            continue
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            _write(path, masked(texts[name]))
        except OSError as exc:
            left_out.append(f"template file {name}: it cannot be written ({exc.strerror or exc})")
            continue
        taken.add(full)
        written[name] = path
    return written


def _template_files(experiment: dict[str, Any]) -> list[str]:
    profiles = experiment.get("profiles")
    return [t for prof in profiles.values() if isinstance(t := _template_of(prof), str)] \
        if isinstance(profiles, dict) else []


def _template_of(profile: Any) -> Any:
    """A profile's config.template_file; None where an edited bundle's profile or config is no mapping (written as
    it is: the registry says what is wrong with it)."""
    config = profile.get("config") if isinstance(profile, dict) else None
    return config.get("template_file") if isinstance(config, dict) else None


def _runnable(eid: str, body: dict[str, Any], templates: set[str], carried: set[str],
              left_out: list[str]) -> dict[str, Any]:
    """The experiment without the profiles whose template file was not written (noted in `left_out`): the bundle
    does not carry it, or carries it but `_templates` left it out (and said why)."""
    body.pop("format", None)
    if not isinstance(body.get("profiles") or {}, dict):
        return body
    profiles = dict(body.get("profiles") or {})
    for name, prof in list(profiles.items()):
        template = _template_of(prof)
        if template is not None and template not in templates:
            del profiles[name]
            why = "is left out (said above)" if template in carried else "is not in the bundle"
            left_out.append(f"experiment {eid} profile {name}: its config's template_file {template} {why}")
    body["profiles"] = profiles
    if body.get("default_profile") not in profiles:
        body.pop("default_profile", None)
        if profiles:
            body["default_profile"] = next(iter(profiles))
    return body
