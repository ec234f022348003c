"""The text a bundle's definitions were written in: each hypothesis's entry of hypotheses.yaml and each experiment
file as the user wrote them (comments kept), and the template files the experiments' profiles render.

A bundle's definitions are parsed data, enough to import and compare; written back out (`wb bundle show
--extract`) they lose every comment, and a profile whose config is rendered from a template file could not run at
all. So export carries the text too, secrets masked as in the definitions, and extract writes it where it can.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import yaml

    from workbench.registry.folder import Registry


def collect(registry: "Registry", hypothesis_ids: list[str], experiment_ids: list[str]) -> dict[str, dict[str, str]]:
    """{"hypotheses": {id: entry}, "experiments": {id: file text}, "templates": {template_file: text}}: what of
    the workbench's files the definitions of `hypothesis_ids` and `experiment_ids` come from. A file that cannot
    be read now, or whose masked text would say something else than its definition (`masked_as_defined`), is left
    out (its definition is still carried, parsed)."""
    from workbench.registry.experiment_checks import read_template_file

    hypotheses: dict[str, str] = {}
    hfile = registry.hypotheses_doc.file if registry.hypotheses_doc is not None else registry.hypotheses_file
    text = _read(Path(hfile))
    if text is not None:
        found = entries(text)
        hypotheses = {h: m for h in hypothesis_ids
                      if h in found and (m := masked_as_defined(found[h], None)) is not None}
    experiments: dict[str, str] = {}
    templates: dict[str, str] = {}
    for eid in experiment_ids:
        doc = registry.experiment_docs.get(eid)
        path = Path(doc.file) if doc is not None else registry.experiment_path(eid)
        text = _read(path)
        if text is not None and (m := masked_as_defined(text, "profiles")) is not None:
            experiments[eid] = m
        for prof in registry.experiments[eid].profiles.values():
            name = prof.config.template_file if prof.config is not None else None
            if name is None or name in templates:
                continue
            template, _ = read_template_file(path.parent / name)
            if template is not None:
                templates[name] = masked(template)
    return {"hypotheses": hypotheses, "experiments": experiments, "templates": templates}


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def masked_as_defined(text: str, masked_key: str | None) -> str | None:
    """`text` masked (`masked`) where that changed nothing it says beyond what the definitions mask (a registered
    value; in an experiment, its profiles' secret-named entries): else None, and the definition alone is carried.
    Masking text by an entry's name is wider (a variable named like a secret, `kv_token_layout: {values: ...}`, is
    masked too, into YAML no wb reads)."""
    import yaml

    from workbench.secrets import mask_named, redact_text

    out = masked(text)
    try:
        meant, said = yaml.safe_load(redact_text(text)), yaml.safe_load(out)
    except yaml.YAMLError:
        return None
    if masked_key is not None and isinstance(meant, dict) and masked_key in meant:
        meant = {**meant, masked_key: mask_named(meant[masked_key])}
    return out if said == meant else None


def masked(text: str) -> str:
    """`text` with its secrets masked as a bundle's definitions mask them: the registered values (`redact`) and the
    entries named like a secret (`mask_profiles`: a token written into a template or a context value)."""
    from workbench.secrets import mask_entries, redact_text

    return mask_entries(redact_text(text)) or text


def entries(text: str) -> dict[str, str]:
    """Each hypothesis entry of the hypotheses.yaml `text`, by id, as written: the comment lines right above its
    `-`, then its lines up to its last value, moved to column 0. Comments above an entry describe it; those after the
    last one belong to none. Nothing for a file whose list is not a block sequence (one written `[...]`), and no
    entry that means something else alone (an alias of an anchor outside it)."""
    import yaml

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return {}
    seq, floor = _sequence(root)
    if seq is None:
        return {}
    values = data["hypotheses"] if isinstance(data, dict) else data
    lines = text.splitlines()
    column = seq.start_mark.column
    out: dict[str, str] = {}
    for item, value in zip(seq.value, values):
        start = item.start_mark.line
        while start > floor and _between(lines[start - 1]):
            start -= 1
        end = _last_line(item, lines)
        floor = end + 1
        hid = _scalar(item, "id")
        if hid is None:
            continue
        body = [line[min(column, len(line) - len(line.lstrip(" "))):] for line in lines[start:end + 1]]
        while body and not body[0].strip():
            body.pop(0)
        entry = "\n".join(body) + "\n"
        if _alone(entry) == [value]:
            out[hid.value] = entry
    return out


def _alone(entry: str) -> Any:
    """What an entry's text means read on its own; None where it cannot be read so."""
    import yaml

    try:
        return yaml.safe_load(entry)
    except yaml.YAMLError:
        return None


def defines(text: str, kind: str, oid: str) -> bool:
    """Whether a carried text is the definition of `oid` alone: a hypothesis entry (a one-item list) or an
    experiment file (a mapping) whose id is `oid`. A bundle is anyone's file; its text may hold something else."""
    data = _alone(text)
    if kind == "hypothesis":
        data = data[0] if isinstance(data, list) and len(data) == 1 else None
    return isinstance(data, dict) and data.get("id") == oid


def _sequence(root: "yaml.Node | None") -> "tuple[yaml.SequenceNode | None, int]":
    """The block sequence of hypotheses in a composed file (`hypotheses:`, or the bare list of format 1) and the
    first line an entry's comments may start on (after the `hypotheses:` key; a bare list's comments above its
    first entry are the file's)."""
    import yaml

    if isinstance(root, yaml.MappingNode):
        for key, value in root.value:
            if isinstance(key, yaml.ScalarNode) and key.value == "hypotheses" and \
                    isinstance(value, yaml.SequenceNode) and not value.flow_style:
                return value, key.end_mark.line + 1
        return None, 0
    if isinstance(root, yaml.SequenceNode) and not root.flow_style:
        return root, root.start_mark.line
    return None, 0


def _between(line: str) -> bool:
    """A line between two entries' values: blank, a comment, or the `-` of an entry whose value starts below it."""
    s = line.strip()
    return not s or s.startswith("#") or s == "-"


def _last_line(node: "yaml.Node", lines: list[str]) -> int:
    """The 0-based last line holding `node`'s text: where its last value ends (a block mapping's own end comes
    after the comments that follow it), less the blank lines a block scalar takes with it."""
    import yaml

    end, stack = 0, [node]
    while stack:
        n = stack.pop()
        if isinstance(n, yaml.ScalarNode) or getattr(n, "flow_style", False):
            m = n.end_mark
            at = m.line if m.line < len(lines) and lines[m.line][:m.column].strip() else m.line - 1
            end = max(end, at)
        elif isinstance(n, yaml.MappingNode):
            stack.extend(x for pair in n.value for x in pair)
        elif isinstance(n, yaml.SequenceNode):
            stack.extend(n.value)
    while end > node.start_mark.line and not lines[end].strip():
        end -= 1
    return end


def _scalar(item: "yaml.Node", key: str) -> "yaml.ScalarNode | None":
    import yaml

    if not isinstance(item, yaml.MappingNode):
        return None
    return next((v for k, v in item.value if isinstance(k, yaml.ScalarNode) and k.value == key
                 and isinstance(v, yaml.ScalarNode)), None)


def without_parent(entry: str) -> str | None:
    """The entry text `entry` (as `entries` gives it) with its `parent` set to null, the id it named kept in a
    comment where the line allows one; None where the text cannot be changed so (the caller writes parsed data)."""
    import yaml

    try:
        root = yaml.compose(entry, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    item = root.value[0] if isinstance(root, yaml.SequenceNode) and len(root.value) == 1 else None
    value = _scalar(item, "parent") if item is not None else None
    if value is None or value.start_mark.line != value.end_mark.line:
        return None
    start, end = value.start_mark.index, value.end_mark.index
    rest = entry[end:].split("\n", 1)
    note = f"  # {value.value}: not in the bundle" if not item.flow_style and not rest[0].strip() else ""
    return entry[:start] + "null" + note + entry[end:]


def indented(entry: str, by: int = 2) -> str:
    """An entry moved right by `by` columns (under `hypotheses:`); blank lines stay empty."""
    return "".join((" " * by + line) if line.strip() else line for line in entry.splitlines(keepends=True))


def parsed_entry(body: dict[str, Any]) -> str:
    """A hypothesis the bundle holds as parsed data only, as an entry `entries` would give."""
    import yaml

    return yaml.safe_dump([body], sort_keys=False)
