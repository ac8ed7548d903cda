"""`PoolStream`: a pool answer read while it arrives, one item at a time, never held whole.

A pool answer is an XML-RPC `methodResponse` whose second value is a string holding the pool
document, escaped: `<value><boolean>1</boolean></value><value><string>&lt;VM_POOL&gt;&lt;VM&gt;...
</string></value><value><i4>0</i4></value>`. Parsing it the plain way (the whole body, then the
document inside it, then every item) holds the body, the string and two trees at once: at 50,000
VMs the lxml floor alone peaked at 1 GB for a 121 MB answer.

Here the body is fed as it comes off the socket (`feed`, chunk by chunk):

- the envelope's head is matched up to `<string>` (a failure, a fault or any other shape is kept
  whole and read by `decode_response` at the end, so its error is the usual one);
- the string's text is unescaped chunk by chunk (the five XML entities and character references;
  line ends normalised as an XML parser does) and fed to an lxml `XMLPullParser`;
- each item element (`<VM>` directly under `<VM_POOL>`, not a `<VM>` a user template may hold) is
  handed to `take` once complete, then removed from the tree, so the tree never holds more than
  the items of one chunk;
- `close` checks that the string ended, that the document ended, and that the rest of the
  envelope is the platform's (`[true, text, code]`).

A body that is truncated, malformed, or holds a character XML cannot carry raises
`MalformedResponse` (`ControlCharacterAnswer` for the latter), never an lxml error.

`PoolStream(plain=True)` reads a whole page the same way with a plain parser instead (no events,
so no call back into Python while lxml parses: the parse runs without the GIL, beside the other
parsing thread), and `tree` hands back the checked pool element; `take_tree` turns its items
into results batch by batch, dropping each batch from the tree once read (issue 24).
`vm_id_span` glances at a page not parsed yet for the ids that set the pages after it.
"""

from __future__ import annotations

import re
from typing import Callable, Generic, TypeVar

from lxml import etree

from tui.adapters.cloud_transport import (
    MalformedResponse,
    check_result,
    control_character_answer,
    decode_response,
)

T = TypeVar("T")
Element = etree._Element

#: the envelope up to the pool's string: `[true, <string>...`
_HEAD = re.compile(
    rb"\A\s*(?:<\?xml(?P<decl>[^>]*)\?>)?\s*<methodResponse>\s*<params>\s*<param>\s*<value>\s*<array>\s*<data>"
    rb"\s*<value>\s*<boolean>\s*1\s*</boolean>\s*</value>\s*<value>\s*<string>")
_ENCODING = re.compile(rb"""encoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")
#: how much of the body may pass without the head being recognised (the real head is ~150 bytes)
_HEAD_MAX = 4096
_END = b"</string>"
_CHARREF = re.compile(rb"&#(x[0-9a-fA-F]{1,8}|[0-9]{1,10});")
#: the longest entity reference kept back when a chunk ends inside one (`&#x0010FFFF;`)
_ENTITY_MAX = 12
_UNSAFE = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def _charref(match: re.Match[bytes]) -> bytes:
    text = match.group(1)
    try:
        code = int(text[1:], 16) if text[:1] == b"x" else int(text)
        return chr(code).encode("utf-8")
    except (ValueError, OverflowError):
        raise MalformedResponse(f"the answer holds a character reference &#{text.decode()}; that is no "
                                "character") from None


def unescape(text: bytes) -> bytes:
    """The text of an XML string element from its escaped form (entities of a well-formed text)."""
    if b"\r" in text:  # an XML parser reads a literal CR LF or CR as LF (XML 1.0, 2.11)
        text = text.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    if b"&" not in text:
        return text
    text = text.replace(b"&lt;", b"<").replace(b"&gt;", b">")
    if b"&" not in text:  # the common case: one scan more, not four
        return text
    if b"&#" in text:
        text = _CHARREF.sub(_charref, text)
    if b"&quot;" in text:
        text = text.replace(b"&quot;", b'"')
    if b"&apos;" in text:
        text = text.replace(b"&apos;", b"'")
    return text.replace(b"&amp;", b"&")  # last: what it gives back is text, not an entity


class PoolStream(Generic[T]):
    """Reads one pool answer fed in chunks; `take` turns each batch of complete item elements
    into results (they are removed from the tree after it returns)."""

    def __init__(self, method: str, pool_tag: str, item_tag: str,
                 take: Callable[[list[Element]], list[T]], *, plain: bool = False) -> None:
        self.method = method
        self.pool_tag = pool_tag
        self.item_tag = item_tag
        self._take = take
        self.items: list[T] = []
        #: bytes of the answer fed so far
        self.size = 0
        self._state = "head"  # head -> text -> tail, or whole (kept and read at the end)
        self._buffer = b""  # the head, the whole answer, or the tail
        self._carry = b""  # the end of the last chunk of text that may continue in the next
        self._head = b""
        self._parser: etree.XMLPullParser | etree.XMLParser | None = None
        self._root: Element | None = None
        #: a plain parser (the tree kept whole, read by `tree`): no event calls back into Python
        self._plain = plain

    # feeding ------------------------------------------------------------------------------------
    def feed(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self._state == "text":
            self._text(chunk)
        elif self._state == "head":
            self._buffer += chunk
            self._read_head()
        else:  # "whole" or "tail": small, or a shape not streamed
            self._buffer += chunk

    def _read_head(self) -> None:
        data = self._buffer
        match = _HEAD.match(data)
        if match is None:
            if len(data) > _HEAD_MAX or b"<string>" in data or b"</methodResponse>" in data:
                self._state = "whole"
            return
        encoding = _ENCODING.search(match.group("decl") or b"")
        if encoding is not None and encoding.group(1).lower() not in (b"utf-8", b"utf8"):
            self._state = "whole"
            return
        self._head, rest = data[:match.end()], data[match.end():]
        self._buffer = b""
        self._state = "text"
        if self._plain:
            self._parser = etree.XMLParser(huge_tree=True, resolve_entities=False, no_network=True)
        else:
            self._parser = etree.XMLPullParser(events=("end",), tag=self.item_tag, huge_tree=True,
                                               resolve_entities=False, no_network=True)
        if rest:
            self._text(rest)

    def _text(self, chunk: bytes) -> None:
        data = self._carry + chunk if self._carry else chunk
        self._carry = b""
        end = data.find(b"<")
        if end >= 0:
            rest = data[end:]
            if rest.startswith(_END):
                self._state = "tail"
                self._buffer = rest[len(_END):]
            elif len(rest) < len(_END) and _END.startswith(rest):
                self._carry = rest  # `</str` at the end of a chunk
            else:
                raise MalformedResponse(f"{self.method} answered markup inside its string value "
                                        f"({rest[:40].decode('utf-8', 'replace')!r}...), which the platform never "
                                        "writes")
            data = data[:end]
        elif data:
            amp = data.rfind(b"&", max(0, len(data) - _ENTITY_MAX))
            if amp >= 0 and b";" not in data[amp:]:
                self._carry = data[amp:]
                data = data[:amp]
            if data.endswith(b"\r"):  # CR LF may be cut between two chunks
                self._carry = b"\r" + self._carry
                data = data[:-1]
        if data:
            self._parse(unescape(data))

    def _parse(self, text: bytes) -> None:
        parser = self._parser
        assert parser is not None
        try:
            parser.feed(text)
        except etree.XMLSyntaxError as exc:
            # the platform stores control characters in names and attributes and then answers
            # XML that cannot carry them: say which and where (looked for only on failure)
            unsafe = _UNSAFE.search(text)
            if unsafe is not None:
                raise control_character_answer(text[max(0, unsafe.start() - 200):unsafe.end() + 100],
                                               self.method) or MalformedResponse(str(exc)) from None
            raise MalformedResponse(f"{self.method} answered malformed XML: {exc}") from None
        if not self._plain:
            self._drain()

    def _drain(self) -> None:
        parser = self._parser
        assert isinstance(parser, etree.XMLPullParser)
        batch: list[Element] = []
        for _event, element in parser.read_events():
            parent = element.getparent()
            if parent is None or parent.getparent() is not None:
                continue  # the root itself, or an element of that name inside an item
            if self._root is None:
                if parent.tag != self.pool_tag:
                    raise MalformedResponse(f"expected <{self.pool_tag}>, got <{parent.tag!s}>")
                self._root = parent
            batch.append(element)
        if batch:
            self.items.extend(self._take(batch))
            root = self._root
            assert root is not None
            for element in batch:
                root.remove(element)

    # the end ------------------------------------------------------------------------------------
    def close(self) -> list[T]:
        """The items of the whole answer; raises `MalformedResponse`, `PlatformFailure` or the
        platform's `Fault` when the answer is not a complete pool document."""
        if self._state in ("head", "whole"):
            return self._close_whole(self._buffer)
        root = self._close_document()
        if self._plain:
            return take_tree(root, self.item_tag, self._take)
        return self.items

    def tree(self) -> Element | list[T]:
        """The pool element of a stream made with `plain` (its items still in it, for `take_tree`);
        the items themselves when the answer was not streamed (a short or unusual one, read
        whole). Raises as `close` does."""
        if self._state in ("head", "whole"):
            return self._close_whole(self._buffer)
        return self._close_document()

    def _close_document(self) -> Element:
        if self._state == "text":
            raise MalformedResponse(f"{self.method}'s answer ended inside its pool document (after "
                                    f"{self.size:,} bytes): it was cut short")
        parser = self._parser
        assert parser is not None
        try:
            root = parser.close()
        except etree.XMLSyntaxError as exc:
            raise MalformedResponse(f"{self.method} answered an incomplete or malformed pool document: {exc}") from None
        if not self._plain:
            self._drain()
        if root.tag != self.pool_tag:
            raise MalformedResponse(f"expected <{self.pool_tag}>, got <{root.tag!s}>")
        # the envelope without the document: the rest of the platform's array must be there
        check_result(decode_response(self._head + _END + self._buffer, self.method))
        return root

    def _close_whole(self, raw: bytes) -> list[T]:
        from tui.adapters.cloud_parse import expect_root
        from tui.adapters.cloud_transport import parse_document

        value = check_result(decode_response(raw, self.method))
        root = expect_root(parse_document(value, self.method), self.pool_tag)
        return self._take([child for child in root if child.tag == self.item_tag])


#: a VM's start and its ID as the platform escapes them in the pool's string (`<VM><ID>7</ID>`)
_VM_START = b"&lt;VM&gt;&lt;ID&gt;"
_VM_ID = re.compile(rb"&lt;VM&gt;&lt;ID&gt;([0-9]{1,18})&lt;/ID&gt;")


def vm_id_span(body: bytes) -> tuple[int, int, int] | None:
    """A glance at a VM pool answer not parsed yet: the ids of its first and last VM and how many
    VMs it seems to hold (the escaped `<VM><ID>` it holds), or None where it shows none. Only a
    guess of which page follows it may rest on this (`PoolPager.guesses_after_first`): a text in
    a CDATA section may look the same; the page's read says what it holds."""
    first = _VM_ID.search(body)
    last = _VM_ID.match(body, body.rfind(_VM_START))
    if first is None or last is None:
        return None
    return int(first.group(1)), int(last.group(1)), body.count(_VM_START)


#: items read from a parsed page per batch (`take_tree`): each batch leaves the tree once read
TREE_BATCH = 256


def take_tree(root: Element, item_tag: str, take: Callable[[list[Element]], list[T]]) -> list[T]:
    """`take` over the `item_tag` children of a parsed pool element, in order, a batch at a time;
    each batch is removed from the tree once read, so the tree shrinks while its results grow."""
    items: list[T] = []
    while len(root):
        batch = root[:TREE_BATCH]
        picked = [child for child in batch if child.tag == item_tag]
        if picked:
            items.extend(take(picked))
        del root[:len(batch)], batch, picked
    return items
