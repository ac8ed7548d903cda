"""The site configuration file (core.yaml) as a comment-preserving document.

`SiteConfig` is a frozen value holding the YAML text. Reading goes through a plain-Python view of
the data; every edit loads the text with ruamel.yaml's round-trip loader, changes the node tree and
dumps it again, so the template's comments, key order, quoting and indentation survive
programmatic edits. Comments written after the last entry of a block (say a heading before the
next top-level key) are moved below a newly appended entry, so they keep heading what they headed.

Paths are dotted (`site_s3_server.endpoint`, `site_variables.cluster.129.template_id`); a list
element is addressed by its index (`site_clusters.0`). Parse errors raise `SiteConfigError` with
the 1-based line and column. Nothing here does I/O.
"""

from __future__ import annotations

import copy
import difflib
import io
import re
import threading
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any, Iterable, Mapping
from urllib.parse import urlsplit

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import CommentMark, MarkedYAMLError, YAMLError
from ruamel.yaml.representer import RoundTripRepresenter
from ruamel.yaml.scalarbool import ScalarBoolean
from ruamel.yaml.scalarstring import ScalarString
from ruamel.yaml.tokens import CommentToken

from tui.domain.bounded import BoundedInputError, check_size, check_tree, guard, yaml_loader
from tui.domain.naming import DEFAULT_NAMING, NamingProfile
from tui.domain.secret_names import mask_yaml_line

_VAULT_HEADER = "$ANSIBLE_VAULT;"
_EXPLICIT_NULL = re.compile(r":[ \t]+(?:null|Null|NULL|~)[ \t]*(?:#.*)?$", re.MULTILINE)
_OPENER = re.compile(r"^(?P<indent> *)(?![-#])[^#]*?:[ \t]*(?:#.*)?$")
MISSING: Any = object()  # "no such key" (None is a valid value)


class SiteConfigError(ValueError):
    """core.yaml could not be parsed or edited; `line`/`column` are 1-based (0 when not about a place)."""

    def __init__(self, message: str, line: int = 0, column: int = 0) -> None:
        super().__init__(f"line {line}, column {column}: {message}" if line else message)
        self.message = message
        self.line = line
        self.column = column


def split_path(path: str) -> tuple[str, ...]:
    """`a.b.0` -> ("a", "b", "0"); an empty part is an error."""
    parts = tuple(path.split("."))
    if not path or any(part == "" for part in parts):
        raise SiteConfigError(f"not a valid path: {path!r} (use dotted keys such as site_s3_server.endpoint)")
    return parts


def key_in(container: Any, part: str) -> Any:
    """The existing key or index of `container` that `part` names, or MISSING."""
    if isinstance(container, Mapping):
        if part in container:
            return part
        if part.lstrip("-").isdigit() and int(part) in container:
            return int(part)
        return MISSING
    if isinstance(container, list):
        if part.isdigit() and int(part) < len(container):
            return int(part)
    return MISSING


def lookup(node: Any, path: str | tuple[str, ...]) -> Any:
    """The value at a dotted path below `node` (plain or round-trip data), or MISSING."""
    for part in split_path(path) if isinstance(path, str) else path:
        key = key_in(node, part)
        if key is MISSING:
            return MISSING
        node = node[key]
    return node


def to_plain(value: Any) -> Any:
    """A round-trip node tree as plain dicts, lists, str, int, float, bool and None."""
    if isinstance(value, Mapping):
        return {to_plain(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, ScalarBoolean):
        return bool(value)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return value


@dataclass(frozen=True)
class SiteConfig:
    """core.yaml text plus the name of its component map; edits return a new SiteConfig."""

    text: str
    variables_key: str = DEFAULT_NAMING.site_variables_key

    @classmethod
    def parse(cls, text: str, naming: NamingProfile = DEFAULT_NAMING) -> "SiteConfig":
        """Check that `text` is a YAML mapping and wrap it; raise SiteConfigError with the position.
        A text parsed lately gives the same value again (frozen, every read a copy) instead of
        parsing it anew: one setup pass opens core.yaml in the whole check, the route manager's
        probe and three steps' decisions, and a component's enabling in its preview, its check and
        its run (ruamel's round-trip load was a third of the setup's CPU)."""
        return _parsed(text, naming.site_variables_key)

    @cached_property
    def _document(self) -> CommentedMap:
        """The loaded tree, shared (`_loaded`): read it, never change it (`edit` changes a copy)."""
        return _loaded(self.text).data

    @cached_property
    def _plain(self) -> dict[str, Any]:
        plain: dict[str, Any] = to_plain(self._document)
        return plain

    @property
    def data(self) -> dict[str, Any]:
        """The whole configuration as plain Python values (a copy: changing it changes nothing)."""
        return copy.deepcopy(self._plain)

    def get(self, path: str, default: Any = None) -> Any:
        found = lookup(self._plain, path)
        return default if found is MISSING else copy.deepcopy(found)

    def has(self, path: str) -> bool:
        return self.get(path, MISSING) is not MISSING

    def components(self) -> tuple[str, ...]:
        """Component identifiers listed in the component map, in file order."""
        variables = self._plain.get(self.variables_key)
        if not isinstance(variables, Mapping):
            return ()
        return tuple(str(name) for name in variables)

    def component_variables(self, component: str) -> Any:
        """The component's entry in the component map (None when listed without variables)."""
        variables = self._plain.get(self.variables_key)
        if not isinstance(variables, Mapping):
            return None
        key = key_in(variables, component)
        return None if key is MISSING else copy.deepcopy(variables[key])

    def edit(self, changes: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> "SiteConfig":
        """Set each dotted path to its value (plain Python); the result keeps comments and order."""
        items = list(changes.items()) if isinstance(changes, Mapping) else list(changes)
        if not items:
            return self
        key = _edit_key(self.text, items)
        with _EDITS_LOCK:
            done = _EDITS.get(key) if key is not None else None
        if done is None:
            document = _RoundTrip.editable(self.text)
            for path, value in items:
                _set_path(document.data, split_path(path), value)
            done = document.dump()
            if key is not None:
                with _EDITS_LOCK:
                    _EDITS[key] = done
                    while len(_EDITS) > _EDITS_KEPT:
                        del _EDITS[next(iter(_EDITS))]
        return SiteConfig(done, self.variables_key)

    def with_value(self, path: str, value: Any) -> "SiteConfig":
        return self.edit([(path, value)])

    def with_component(self, component: str, variables: Mapping[str, Any] | None = None, *, merge: bool = True) -> "SiteConfig":
        """List `component` in the component map and set its variables.

        With `merge` (the default) only the given variables change and the others keep their
        values; a component listed with null becomes a mapping when variables are given. Without
        variables the component is listed with null unless already listed.
        """
        base = f"{self.variables_key}.{component}"
        current = self.component_variables(component)
        listed = component in self.components()
        if not variables:
            return self if listed else self.with_value(base, None)
        if not merge or not isinstance(current, Mapping):
            return self.with_value(base, _nested(variables))
        return self.edit(list(_leaf_items(base, variables)))

    def masked_text(self) -> str:
        """The text with values of secret-named keys masked (for display and diffs)."""
        return mask_secrets(self.text)


def _nested(values: Mapping[str, Any]) -> dict[str, Any]:
    """Expand dotted keys (`{"129.template_id": 3}` -> `{"129": {"template_id": 3}}`)."""
    result: dict[str, Any] = {}
    for key, value in values.items():
        parts = str(key).split(".")
        node = result
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = _nested(value) if isinstance(value, Mapping) else value
    return result


def _leaf_items(prefix: str, values: Mapping[str, Any]) -> Iterable[tuple[str, Any]]:
    for key, value in values.items():
        path = f"{prefix}.{key}"
        if isinstance(value, Mapping) and value:
            yield from _leaf_items(path, value)
        else:
            yield path, value


def cloud_fill(
    *,
    objectstore_address: str | None = None,
    gate_endpoint: str | None = None,
    s3_scheme: str = "https",
    s3_port: int = 9000,
) -> list[tuple[str, Any]]:
    """Changes that fill core.yaml from what the cloud knows (apply with `SiteConfig.edit`).

    `objectstore_address` is the object store VM's address (the deployment's site record);
    `gate_endpoint` is the platform's ONEGATE_ENDPOINT (`http://10.11.32.103:5030`), of which
    `site_onegate` keeps the host.
    """
    changes: list[tuple[str, Any]] = []
    if objectstore_address:
        host = f"[{objectstore_address}]" if ":" in objectstore_address else objectstore_address
        changes.append(("site_s3_server.endpoint", f"{s3_scheme}://{host}:{s3_port}"))
    if gate_endpoint:
        gate = urlsplit(gate_endpoint).hostname if "://" in gate_endpoint else gate_endpoint.split(":")[0]
        if gate:
            changes.append(("site_onegate", gate))
    return changes


#: edits made lately: (the text, the changes frozen) -> the text edited. An edit is a function of
#: its text and changes, and one component's enabling makes the same one in its preview, its
#: early check and its write (twice: planned, then made under the file's lock); a failed edit
#: is not kept (it raises each time)
_EDITS: dict[tuple[Any, ...], str] = {}
_EDITS_KEPT = 32
_EDITS_LOCK = threading.Lock()


def _edit_key(text: str, items: list[tuple[str, Any]]) -> tuple[Any, ...] | None:
    """The key of an edit in `_EDITS`; None when a value is of a type not frozen here."""
    try:
        return (text, tuple((str(path), _frozen(value)) for path, value in items))
    except TypeError:
        return None


def _frozen(value: Any) -> Any:
    """`value` as a hashable key that keeps what the edit sees: each value's exact type (1, 1.0,
    True and "1" differ; a quoted ruamel string is not a plain one), mappings in their order."""
    kind = type(value)
    if value is None or kind in (bool, int, float, str) or isinstance(value, ScalarString):
        return (kind, value)
    if isinstance(value, Mapping):
        return (kind, tuple((_frozen(k), _frozen(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (kind, tuple(_frozen(item) for item in value))
    raise TypeError(f"not kept: {kind.__name__}")


@lru_cache(maxsize=16)
def _loaded(text: str) -> _RoundTrip:
    """`text`'s round-trip load, kept for the texts used lately (a failure is not kept); shared by
    every reader and copied by every edit, so nobody may change it."""
    return _RoundTrip(text)


@lru_cache(maxsize=16)
def _parsed(text: str, variables_key: str) -> SiteConfig:
    """`SiteConfig.parse`'s value of `text` (a failure is not kept: it raises each time)."""
    config = SiteConfig(text, variables_key)
    config._document  # noqa: B018 - parse now so errors surface here
    return config


def parse_value(raw: str) -> Any:
    """A value typed by the operator, read as YAML (`12` -> 12, `true` -> True, empty -> None)."""
    if not raw.strip():
        return None
    try:
        with guard("the value"):
            value = yaml_loader(YAML(typ="safe", pure=True), "the value").load(raw)
        check_tree(value, "the value")
        return value
    except BoundedInputError as exc:
        raise SiteConfigError(f"{raw[:40]!r}…: {exc.message}" if len(raw) > 40 else f"{raw!r}: {exc.message}") from None
    except YAMLError as exc:
        raise SiteConfigError(f"{raw!r} is not a valid value ({str(exc).splitlines()[0]})") from None


def mask_secrets(text: str) -> str:
    return "\n".join(mask_yaml_line(line) for line in text.split("\n"))


def config_diff(old_text: str, new_text: str, old_label: str = "a/core.yaml", new_label: str = "b/core.yaml", *, reveal: bool = False) -> str:
    """A unified diff of two decrypted configurations; secret-named values masked unless `reveal`."""
    if not reveal:
        old_text, new_text = mask_secrets(old_text), mask_secrets(new_text)
    lines = difflib.unified_diff(old_text.splitlines(keepends=True), new_text.splitlines(keepends=True), old_label, new_label)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


# --- round trip -----------------------------------------------------------------------------


class _ExplicitNullRepresenter(RoundTripRepresenter):
    """Writes None as `null` everywhere (for files that spell their nulls out)."""


_ExplicitNullRepresenter.add_representer(
    type(None), lambda self, data: self.represent_scalar("tag:yaml.org,2002:null", "null")
)


def _guess_indent(text: str) -> tuple[int, int, int]:
    """(mapping indent, sequence indent, dash offset) as the text uses them; ruamel's defaults otherwise."""
    mapping = sequence = offset = None
    opener: int | None = None
    for raw in text.splitlines():
        stripped = raw.strip()
        if not stripped or stripped.startswith("#") or stripped in ("---", "..."):
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        if opener is not None and indent > opener:
            if stripped.startswith("- ") or stripped == "-":
                if offset is None:
                    offset = indent - opener
                    sequence = offset + 2
            elif mapping is None:
                mapping = indent - opener
        if mapping is not None and offset is not None:
            break
        match = _OPENER.match(raw)
        opener = len(match.group("indent")) if match else None
    return (mapping or 2, sequence or 2, offset or 0)


class _RoundTrip:
    def __init__(self, text: str, data: CommentedMap | None = None) -> None:
        if text.lstrip().startswith(_VAULT_HEADER):
            raise SiteConfigError("this is vault-encrypted text: decrypt it first (with the vault password)", 1, 1)
        self.yaml = YAML()
        self.yaml.preserve_quotes = True
        self.yaml.width = 4096
        mapping, sequence, offset = _guess_indent(text)
        self.yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
        if _EXPLICIT_NULL.search(text):
            self.yaml.Representer = _ExplicitNullRepresenter
        first = next((line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")), "")
        self.yaml.explicit_start = first == "---" or first.startswith("--- ")
        yaml_loader(self.yaml, "core.yaml")
        self.data = self._load(text) if data is None else data

    @classmethod
    def editable(cls, text: str) -> "_RoundTrip":
        """`text` loaded for an edit: a deep copy of its loaded tree (`_loaded`), which dumps as a
        fresh load would (ruamel's nodes copy with their comments and styles) for a quarter of
        the load's CPU: one setup run edits nine texts fifty times (each component's preview, its
        early check and its write)."""
        return cls(text, copy.deepcopy(_loaded(text).data))

    def _load(self, text: str) -> CommentedMap:
        try:
            check_size(text, "core.yaml")
            with guard("core.yaml"):
                data = self.yaml.load(text)
            check_tree(data, "core.yaml")
        except BoundedInputError as exc:
            raise SiteConfigError(exc.message, exc.line or 0, exc.column or 0) from None
        except MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            problem = exc.problem or exc.context or "invalid YAML"
            if exc.context and exc.problem:
                problem = f"{exc.problem} ({exc.context})"
            problem = str(problem).split("\n")[0].strip()
            if mark is None:
                raise SiteConfigError(problem) from exc
            raise SiteConfigError(problem, mark.line + 1, mark.column + 1) from exc
        except YAMLError as exc:
            raise SiteConfigError(str(exc).split("\n")[0]) from exc
        if data is None:
            data = CommentedMap()
        if not isinstance(data, CommentedMap):
            raise SiteConfigError("the top level must be a mapping of settings (key: value lines)", 1, 1)
        return data

    def dump(self) -> str:
        out = io.StringIO()
        self.yaml.dump(self.data, out)
        return out.getvalue()


def _to_node(value: Any) -> Any:
    if isinstance(value, Mapping) and not isinstance(value, CommentedMap):
        node = CommentedMap()
        for key, item in value.items():
            node[key] = _to_node(item)
        return node
    if isinstance(value, (list, tuple)) and not isinstance(value, CommentedSeq):
        return CommentedSeq(_to_node(item) for item in value)
    return value


def _keep_style(old: Any, new: Any) -> Any:
    if isinstance(old, ScalarString) and isinstance(new, str) and not isinstance(new, ScalarString):
        return type(old)(new)
    return new


def _set_path(root: CommentedMap, parts: tuple[str, ...], value: Any) -> None:
    node: Any = root
    for index, part in enumerate(parts[:-1]):
        key = key_in(node, part)
        if key is MISSING:
            # build the rest of the path as one new nested value and insert it here
            nested: Any = value
            for inner in reversed(parts[index + 1 :]):
                nested = {inner: nested}
            _put(node, part, nested, ".".join(parts[: index + 1]))
            return
        child = node[key]
        if not isinstance(child, (CommentedMap, CommentedSeq)):
            if child is None:
                nested = value
                for inner in reversed(parts[index + 1 :]):
                    nested = {inner: nested}
                _put(node, part, nested, ".".join(parts[: index + 1]))
                return
            raise SiteConfigError(f"{'.'.join(parts[: index + 1])} holds a single value, not a mapping: cannot set {'.'.join(parts)}")
        node = child
    _put(node, parts[-1], value, ".".join(parts))


def _put(container: Any, part: str, value: Any, where: str) -> None:
    """Set or add one entry, moving the trailing comments so they stay where they were."""
    key = key_in(container, part)
    if isinstance(container, CommentedSeq):
        if key is MISSING and part != str(len(container)):
            raise SiteConfigError(f"{where}: list index out of range (the list has {len(container)} items)")
    elif not isinstance(container, CommentedMap):
        raise SiteConfigError(f"{where}: the parent is not a mapping or list")
    if key is not MISSING:
        old = container[key]
        if _equal(old, value):
            return
        tail = _take_tail(container, key)
        container[key] = _to_node(_keep_style(old, value))
        _give_tail(container, key, tail)
        return
    last = _last_key(container)
    tail = _take_tail(container, last) if last is not MISSING else ""
    if isinstance(container, CommentedSeq):
        container.append(_to_node(value))
        new_key: Any = len(container) - 1
    else:
        new_key = part
        container[new_key] = _to_node(value)
    _give_tail(container, new_key, tail)


def _equal(old: Any, new: Any) -> bool:
    try:
        return to_plain(old) == to_plain(new) and type(to_plain(old)) is type(to_plain(new))
    except Exception:  # noqa: BLE001 - unusual values: treat as different
        return False


# Comment plumbing. ruamel keeps a comment that follows an entry's line in that entry's slot
# (mapping: ca.items[key][2], sequence: ca.items[index][0]); its first line is the entry's own
# end-of-line comment and the rest (blank lines, full-line comments) really precede whatever
# comes next. Before changing or appending an entry we take that rest away from the last leaf
# of the region and give it to the new last leaf.


def _last_key(container: Any) -> Any:
    if isinstance(container, CommentedMap) and len(container):
        return next(reversed(container))
    if isinstance(container, CommentedSeq) and len(container):
        return len(container) - 1
    return MISSING


def _is_block(value: Any) -> bool:
    if not isinstance(value, (CommentedMap, CommentedSeq)) or not len(value):
        return False
    return not value.fa.flow_style()


def _slot(container: Any) -> int:
    return 0 if isinstance(container, CommentedSeq) else 2


def _deepest(container: Any, key: Any) -> tuple[Any, Any]:
    """The container and key of the last leaf entry within `container[key]` (itself if a leaf)."""
    while _is_block(container[key]):
        container = container[key]
        key = _last_key(container)
    return container, key


def _take_tail(container: Any, key: Any) -> str:
    owner, leaf = _deepest(container, key)
    entry = owner.ca.items.get(leaf)
    slot = _slot(owner)
    if not entry or len(entry) <= slot or entry[slot] is None:
        return ""
    token = entry[slot]
    value: str = token.value
    cut = value.find("\n")
    if cut < 0 or cut == len(value) - 1:
        return ""
    own, tail = value[: cut + 1], value[cut + 1 :]
    if "#" in own:
        token.value = own
    else:
        entry[slot] = None
        if all(item is None for item in entry):
            del owner.ca.items[leaf]
    return tail


def _give_tail(container: Any, key: Any, tail: str) -> None:
    if not tail:
        return
    owner, leaf = _deepest(container, key)
    slot = _slot(owner)
    entry = owner.ca.items.setdefault(leaf, [None, None, None, None])
    while len(entry) <= slot:
        entry.append(None)
    if entry[slot] is not None:
        entry[slot].value = entry[slot].value + tail
    else:
        entry[slot] = CommentToken("\n" + tail, CommentMark(0), None)

