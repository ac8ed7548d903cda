"""`VmSummaryCache`: the VM list's refresh reads again only the VMs that changed.

A console asks for the whole VM pool every few seconds and most VMs are the same each time.
The platform writes the pool as `<VM_POOL><VM>...</VM><VM>...</VM></VM_POOL>`, one VM body after
the other, so the answer splits into one piece of text per VM at `</VM><VM>` (a C-level string
split). A piece seen in the previous refresh gives back the `VmSummary` built from it then; only
new or changed pieces are parsed, one by one. With no usable previous refresh (the first one, or
when most VMs changed) the whole document is parsed as before and its VMs paired with the pieces.

Why a split is safe although template values (CDATA) may contain any text, `</VM><VM>` included:
a split inside a CDATA section leaves a piece with an unterminated CDATA section, which is not a
well-formed VM element. Such a piece is never in the cache (only pieces that parsed are stored),
parsing it fails, and the whole document is then parsed the usual way; the same happens when the
pieces do not pair one-to-one with the document's VM elements. The result is always exactly what
`cloud_parse.pool(document, "VM_POOL", "VM", cloud_parse.vm_summary)` gives (tests compare both).

Pieces are remembered by (length, `hash()` of the text): Python's string hash is keyed per
process, so two different pieces with the same key cannot be crafted, and the cache holds no copy
of the text (a 50,000-VM pool is 120 MB of it). The cache keeps only the last refresh's VMs.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from lxml import etree

from tui.adapters import cloud_parse as parse
from tui.adapters.cloud_transport import huge_parser, parse_document

if TYPE_CHECKING:  # pragma: no cover
    from tui.domain.vms import VmSummary

_OPEN, _CLOSE, _EMPTY = "<VM_POOL>", "</VM_POOL>", "<VM_POOL/>"
_BOUNDARY = "</VM><VM>"
#: parse the whole document instead of piece by piece when more than this share of VMs is new
_REPARSE_SHARE = 0.2

Key = tuple[int, int]


def _pieces(text: str) -> list[str] | None:
    """The inside of each VM element (`<VM>` and `</VM>` left out, which saves copying the whole
    text once more), or None when the document is not a plain run of <VM> elements."""
    if text == _EMPTY or text == _OPEN + _CLOSE:
        return []
    if not (text.startswith(_OPEN + "<VM>") and text.endswith("</VM>" + _CLOSE)):
        return None
    return text[len(_OPEN) + 4:-(len(_CLOSE) + 5)].split(_BOUNDARY)


def _key(piece: str) -> Key:
    return len(piece), hash(piece)


class VmSummaryCache:
    """The VMs of the previous refresh, by the text they were built from (see the module docstring)."""

    def __init__(self) -> None:
        self._known: dict[Key, VmSummary] = {}
        self._lock = threading.Lock()
        #: how the last call went: VMs reused from the previous refresh, VMs parsed
        self.reused = 0
        self.parsed = 0

    def summaries(self, text: str, method: str = "one.vmpool.info") -> tuple["VmSummary", ...]:
        """The VMs of a VM_POOL document (the success value of `method`; anything but an XML
        document raises `MalformedResponse`)."""
        pieces = _pieces(text) if isinstance(text, str) else None
        with self._lock:
            known = self._known
        result = None if pieces is None else self._from_pieces(pieces, known)
        if result is None:
            result = self._from_document(text, method, pieces)
        return result

    def _from_pieces(self, pieces: list[str], known: dict[Key, "VmSummary"]) -> tuple["VmSummary", ...] | None:
        keys = [_key(piece) for piece in pieces]
        missing = [index for index, key in enumerate(keys) if key not in known]
        if len(missing) > _REPARSE_SHARE * len(pieces) and len(missing) > 16:
            return None
        fresh: dict[Key, VmSummary] = {}
        for index in missing:
            try:
                element = etree.fromstring("<VM>" + pieces[index] + "</VM>", parser=huge_parser())
            except etree.XMLSyntaxError:
                return None  # a split inside a CDATA section: parse the whole document
            if element.tag != "VM":
                return None
            fresh[keys[index]] = parse.vm_summary(element)
        summaries = tuple(fresh.get(key) or known[key] for key in keys)
        self._remember(dict(zip(keys, summaries)), reused=len(pieces) - len(missing), parsed=len(missing))
        return summaries

    def _from_document(self, text: str, method: str, pieces: list[str] | None) -> tuple["VmSummary", ...]:
        root = parse_document(text, method)
        summaries = parse.pool(root, "VM_POOL", "VM", parse.vm_summary)
        paired = pieces is not None and len(pieces) == len(summaries) and len(root) == len(summaries)
        self._remember(dict(zip(map(_key, pieces), summaries)) if paired and pieces is not None else {},
                       reused=0, parsed=len(summaries))
        return summaries

    def _remember(self, known: dict[Key, "VmSummary"], *, reused: int, parsed: int) -> None:
        with self._lock:
            self._known = known
            self.reused, self.parsed = reused, parsed

    def clear(self) -> None:
        with self._lock:
            self._known = {}
