"""The VM list's pages parsed ahead, read by a compiled XSLT off the GIL (issue 24).

`vm_summary_page` gives the rows `tui.adapters.cloud_parse.vm_summary` gives for each VM of a
parsed `VM_POOL` page, with the texts picked by libxslt and converted by cloud_parse's own readers.
"""

from __future__ import annotations

import threading

from lxml import etree

from tui.adapters.cloud_parse import (
    Element,
    _count,
    _float,
    _opt_int,
    _summary,
    _written_int,
    vm_summary,
)
from tui.domain.vms import VmSummary

# The VM list's pages parsed ahead: read by a compiled XSLT, off the GIL ------------------------
# A page's rows are the same `vm_summary` gives, but the ~20 texts of each VM are picked by libxslt
# (which runs without the GIL, in the parsing thread that parsed the page, beside the other) into one
# text, so that Python splits strings instead of making an element proxy for each of a VM's ~60
# elements (issue 24, a 1,000-VM page: ~40 ms of Python with the GIL held -> ~9 ms, and ~31 ms of
# libxslt without it). Each path reads as `vm_summary` does:
# the last element of a repeated tag (`X[last()]`), an element's `text` (its first child node when
# that is text, `_FIRST_TEXT`), the last record of HISTORY_RECORDS (comments and
# processing instructions count, as in lxml's `history[-1]`), every non-empty address of every NIC
# and NIC_ALIAS in order. The texts are converted by the same readers (a malformed number raises the
# same `MalformedResponse`).
#: between two fields of a VM, and after each VM: private-use characters, which a platform
#: document may still hold (a name is any text): the record is checked (see `_summaries_of_text`)
_FIELD, _RECORD = "\ue000", "\ue001"
#: an element's `text` in XPath: its first child node when that is text (`node()[1][self::text()]`
#: says the same and takes ~20% longer)
_FIRST_TEXT = "text()[1][not(preceding-sibling::node())]"
_TEXT = "[last()]/" + _FIRST_TEXT
#: the sections read more than once, each picked once per VM into a variable (a path from the
#: variable reads as the path from the VM: `$t/CPU` is `TEMPLATE[last()]/CPU`)
_VARIABLES = (
    ("t", "TEMPLATE[last()]"),
    ("h", "HISTORY_RECORDS[last()]/node()[not(self::text())][last()]"),
    ("m", "MONITORING[last()]"),
    ("u", "USER_TEMPLATE[last()]"),
)
#: every non-empty address of every NIC and NIC_ALIAS, in document order (a union is in document
#: order: the same nodes as `$t/*[self::NIC or self::NIC_ALIAS]/*[self::IP or ...]`, ~10% faster)
_IPS = " | ".join(f"$t/{nic}/{address}/{_FIRST_TEXT}[. != '']"
                  for nic in ("NIC", "NIC_ALIAS") for address in ("IP", "IP6_GLOBAL", "IP6"))
#: the texts of a record after its count of addresses, in order (the addresses follow them)
_SUMMARY_PATHS = (
    "ID", "NAME", "UID", "GID", "UNAME", "GNAME", "STATE", "LCM_STATE", "STIME", "$t/CPU", "$t/VCPU", "$t/MEMORY",
    "$h/HOSTNAME", "$h/HID", "$m/CPU", "$m/MEMORY", "$u/SERVICE_ID", "$u/ROLE_NAME")
#: fields of a record before its addresses: their count, then `_SUMMARY_PATHS`
_SUMMARY_FIELDS = 1 + len(_SUMMARY_PATHS)
#: monitored values are None when absent: present ones are written after a `=`
_PRESENT = frozenset(("$m/CPU", "$m/MEMORY"))


def _summary_stylesheet() -> str:
    def field(path: str) -> str:
        if path in _PRESENT:
            return f'<xsl:for-each select="{path}[last()]">=<xsl:value-of select="{_FIRST_TEXT}"/></xsl:for-each>'
        return f'<xsl:value-of select="{path}{_TEXT}"/>'
    variables = "".join(f'<xsl:variable name="{name}" select="{path}"/>' for name, path in (*_VARIABLES, ("ips", _IPS)))
    record = _FIELD.join(['<xsl:value-of select="count($ips)"/>', *(field(path) for path in _SUMMARY_PATHS)])
    return f"""<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="text" encoding="UTF-8"/>
<xsl:template match="/"><xsl:value-of select="count(VM_POOL/VM)"/>{_RECORD}<xsl:apply-templates select="VM_POOL/VM"/></xsl:template>
<xsl:template match="VM">{variables}{record}<xsl:for-each select="$ips">{_FIELD}<xsl:value-of select="."/></xsl:for-each>{_RECORD}</xsl:template>
</xsl:stylesheet>"""


#: the compiled stylesheet, one per thread (an lxml XSLT object is used by one thread at a time)
_stylesheets = threading.local()


def _summary_xslt() -> etree.XSLT:
    xslt: etree.XSLT | None = getattr(_stylesheets, "xslt", None)
    if xslt is None:
        xslt = _stylesheets.xslt = etree.XSLT(etree.XML(_summary_stylesheet().encode("utf-8")),
                                              access_control=etree.XSLTAccessControl.DENY_ALL)
    return xslt


def vm_summary_page(root: Element) -> list[VmSummary]:
    """The VM list's rows of a parsed page (its `VM_POOL` element): the texts picked by the
    stylesheet (off the GIL), then the rows built from them (`_summaries_of_text`); the elements
    read by `vm_summary` instead when a text holds one of the separators or the stylesheet failed."""
    try:
        text: str | None = str(_summary_xslt()(root))
    except etree.XSLTError:
        text = None
    summaries = None if text is None else _summaries_of_text(text)
    return [vm_summary(vm) for vm in root if vm.tag == "VM"] if summaries is None else summaries


def _summaries_of_text(text: str) -> list[VmSummary] | None:
    """`vm_summary` of every record of the stylesheet's text; None when the text does not split
    into as many records as the page has VMs, each with its fields and addresses (a name holding
    a separator would shift them: every extra separator adds a record or a field)."""
    records = text.split(_RECORD)
    head = records[0]
    if records.pop() != "" or not head.isdecimal() or len(records) != int(head) + 1:
        return None
    out: list[VmSummary] = []
    append = out.append
    for record in records[1:]:
        fields = record.split(_FIELD)
        count = fields[0]
        if not count.isdecimal() or len(fields) != _SUMMARY_FIELDS + int(count):
            return None
        (_, vm_id, name, uid, gid, owner, group, state_text, lcm_text, stime, cpu, vcpu, memory, host, host_id,
         cpu_usage, memory_usage, service, role) = fields[:_SUMMARY_FIELDS]
        append(_summary(vm_id, name, uid, gid, owner, group, state_text, lcm_text, stime, cpu, vcpu, memory, host,
                        _opt_int(host_id) if host_id else None, tuple(fields[_SUMMARY_FIELDS:]),
                        _float(cpu_usage[1:]) if cpu_usage else None, _count(memory_usage[1:]) if memory_usage else None,
                        _written_int(service) if service else None, role))
    return out
