"""YAML loading that remembers where every value came from, so errors can name file and line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from workbench.errors import ConfigError

Loc = tuple[Any, ...]


class LocatedYaml:
    """Parsed YAML data plus the 1-based line of every mapping key and sequence item."""

    def __init__(self, data: Any, lines: dict[Loc, int], file: str) -> None:
        self.data = data
        self.lines = lines
        self.file = file

    def line_of(self, loc: Loc) -> int | None:
        """The line of `loc`, or of its nearest located ancestor."""
        loc = tuple(loc)
        while loc:
            if loc in self.lines:
                return self.lines[loc]
            loc = loc[:-1]
        return self.lines.get((), 1)

    def error(self, message: str, loc: Loc = (), *, hint: str | None = None) -> ConfigError:
        field = ".".join(str(p) for p in loc) or None
        return ConfigError(message, file=self.file, line=self.line_of(loc), field=field, hint=hint)


def _scalar_key(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    try:
        return loader.construct_object(node, deep=True)
    except Exception:  # a key that is not a plain scalar; fall back to its text
        return getattr(node, "value", None)


def _walk(loader: yaml.SafeLoader, node: yaml.Node, loc: Loc, lines: dict[Loc, int], file: str) -> None:
    lines.setdefault(loc, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = _scalar_key(loader, key_node)
            key = _norm_key(key)
            line = key_node.start_mark.line + 1
            if key in seen:
                field = ".".join(str(p) for p in (*loc, key))
                raise ConfigError(f"duplicate key {key!r} (first at line {seen[key]})",
                                  file=file, line=line, field=field)
            seen[key] = line
            lines[(*loc, key)] = line
            _walk(loader, value_node, (*loc, key), lines, file)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[(*loc, i)] = item.start_mark.line + 1
            _walk(loader, item, (*loc, i), lines, file)


def _norm_key(key: Any) -> Any:
    # YAML 1.1 reads bare on/off/yes/no as booleans; wb's variables use the words.
    if key is True:
        return "on"
    if key is False:
        return "off"
    return key


def load_located(path: str | Path, *, text: str | None = None) -> LocatedYaml:
    """Parse `path` (or `text`, reported as `path`) into data and a line map; bad YAML is a ConfigError."""
    file = str(path)
    if text is None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError("file not found", file=file,
                              hint="check the path, or run wb from the workbench folder") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read file: {exc}", file=file) from exc
    try:
        loader = yaml.SafeLoader(text)
        try:
            node = loader.get_single_node()
            lines: dict[Loc, int] = {}
            if node is not None:
                _walk(loader, node, (), lines, file)
                data = loader.construct_document(node)
            else:
                data = None
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise ConfigError(f"invalid YAML: {problem}", file=file, line=line,
                          hint="fix the YAML syntax (indentation, quotes, colons)") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"invalid YAML: {exc}", file=file) from exc
    return LocatedYaml(data, lines, file)
