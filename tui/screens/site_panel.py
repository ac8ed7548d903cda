"""The side panel of the site configuration screen: parse state, components, findings.

`SiteChecks` holds what the panel shows, computed from the editor's text: the parsed
configuration or its first YAML error, the component library, the cloud facts, the verdict and its
findings; `show(panel, dirty=...)` paints it.

Pure rendering from values (the configuration, the component library, the findings) to Rich
`Text`; every string from the file or the library is plain text, never markup. Components show
whether they are complete (a glyph and a word, not colour alone), each site variable with its
value (secret values masked) and its description from the component's public.yaml.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from tui.domain.appliance_identity import id_kind
from tui.domain.components import ComponentDefinition, ComponentLibrary
from tui.domain.naming import NamingProfile
from tui.domain.secret_names import MASK, is_secret_key
from tui.domain.severity import Severity
from tui.domain.site_checks import Finding
from tui.domain.site_config import MISSING, SiteConfig, SiteConfigError, lookup
from tui.domain.site_fill import CloudFacts
from tui.procedures.site.verdict import SiteVerdict, verdict_of

OK, PROBLEM, WARN, UNKNOWN = ("✔", "green"), ("✘", "bold red"), ("!", "yellow"), ("?", "magenta")


def parse_text(error: SiteConfigError | None, *, dirty: bool) -> Text:
    """`✔ valid YAML` or `✘ line 12, column 5: <problem>`, and whether there are unsaved edits."""
    text = Text()
    if error is None:
        text.append("✔ valid YAML", "green")
    else:
        where = f"line {error.line}, column {error.column}: " if error.line else ""
        text.append("✘ YAML error  ", "bold red")
        text.append(f"{where}{error.message}")
    text.append("   ")
    text.append("● unsaved changes" if dirty else "○ saved", "yellow" if dirty else "dim")
    return text


def _value(path: str, value: Any) -> str:
    if value is MISSING:
        return "missing"
    if value is None or value == "":
        return "not set"
    if is_secret_key(path.rsplit(".", 1)[-1]):
        return MASK
    return str(value)


def _component_findings(findings: Sequence[Finding], prefix: str) -> list[Finding]:
    return [f for f in findings if f.path == prefix or f.path.startswith(prefix + ".")]


def _variables_table(rows: list[tuple[Text, Text]]) -> Table:
    table = Table.grid(padding=(0, 1))
    table.add_column(no_wrap=True)
    table.add_column(overflow="fold", style="dim")
    for left, right in rows:
        table.add_row(left, right)
    return table


def components_text(config: SiteConfig | None, library: ComponentLibrary | None, findings: Sequence[Finding], *,
                    verified: bool = False) -> RenderableType:
    """Each listed component with its state, its site variables, values and descriptions.

    A component whose appliance IDs have not been checked against the cloud (`verified` False)
    is "not verified", never "complete"."""
    if config is None:
        return Text("(no configuration loaded)", "dim")
    names = config.components()
    if not names:
        return Text(f"{config.variables_key} lists no component", "bold red")
    parts: list[RenderableType] = []
    for name in names:
        text = Text()
        prefix = f"{config.variables_key}.{name}"
        own = _component_findings(findings, prefix)
        definition = library.get(name) if library is not None else None
        unset = _unset_ids(definition, config.component_variables(name)) if definition is not None else []
        if definition is None:
            glyph, style = UNKNOWN
            word = "not in the library" if library is not None else "library not loaded"
        elif unset:
            (glyph, style), word = PROBLEM, f"incomplete: {', '.join(unset)} not set"
        elif any(f.severity is Severity.ERROR for f in own):
            (glyph, style), word = PROBLEM, "incomplete"
        elif own:
            (glyph, style), word = WARN, "check"
        elif definition.appliances and _has_ids(definition) and not verified:
            (glyph, style), word = UNKNOWN, "not verified against the cloud"
        else:
            (glyph, style), word = OK, "complete"
        text.append(glyph, style)
        text.append(" ")
        text.append(name, "bold")
        text.append(f"  {word}", style)
        if definition is not None and definition.short_description:
            text.append(f"  {definition.short_description}", "dim")
        parts.append(text)
        if definition is None:
            continue
        current = config.component_variables(name)
        rows: list[tuple[Text, Text]] = []
        for leaf, description in definition.variable_paths():
            found = lookup(current, leaf) if isinstance(current, dict) else MISSING
            bad = found is MISSING or found is None or found == ""
            left = Text.assemble("  ", (leaf, "bold red" if bad else ""), " = ", (_value(leaf, found), "bold red" if bad else "cyan"))
            rows.append((left, Text(description)))
        if definition.appliances:
            rows.append((Text("  appliance", "italic"), Text(", ".join(definition.appliance_record_ids()))))
        if rows:
            parts.append(_variables_table(rows))
    return Group(*parts)


def _unset_ids(definition: ComponentDefinition, current: Any) -> list[str]:
    """The ID variables the definition needs that the site leaves unset (missing, null or empty).
    A version group's IDs are needed only when the site lists that version."""
    groups = set(definition.version_groups())
    unset: list[str] = []
    for leaf, _ in definition.variable_paths():
        if id_kind(leaf) is None:
            continue
        head = leaf.split(".", 1)[0]
        if head in groups and not (isinstance(current, dict) and lookup(current, head) is not MISSING):
            continue
        found = lookup(current, leaf) if isinstance(current, dict) else MISSING
        if found is MISSING or found is None or found == "":
            unset.append(leaf)
    return unset


def _has_ids(definition: ComponentDefinition) -> bool:
    return any(id_kind(leaf) is not None for leaf, _ in definition.variable_paths())


def findings_text(findings: Sequence[Finding], cloud_note: str = "") -> Text:
    """Errors and warnings with their paths; a line saying whether the cloud was consulted."""
    text = Text()
    errors = sum(1 for f in findings if f.severity is Severity.ERROR)
    warnings = len(findings) - errors
    if not findings:
        text.append("✔ no problems found", "green")
    else:
        text.append(f"{errors} error(s), {warnings} warning(s)", "bold red" if errors else "yellow")
    for finding in findings:
        glyph, style = PROBLEM if finding.severity is Severity.ERROR else WARN
        text.append("\n")
        text.append(glyph, style)
        text.append(" ")
        text.append(finding.path, "bold")
        text.append(f": {finding.message}")
    if cloud_note:
        text.append(f"\n{cloud_note}", "dim")
    return text


class SitePanel(VerticalScroll):
    """Parse state, components and findings, stacked; fed values by the screen."""

    DEFAULT_CSS = """
    SitePanel { height: 1fr; }
    SitePanel > .panel-title { text-style: bold underline; margin: 1 0 0 0; }
    SitePanel > #panel-parse { margin: 0 0 0 0; }
    """

    def compose(self) -> ComposeResult:
        yield Static(Text(""), id="panel-parse")
        yield Static(Text("Findings"), classes="panel-title")
        yield Static(Text(""), id="panel-findings")
        yield Static(Text("Components in site_variables"), classes="panel-title")
        yield Static(Text(""), id="panel-components")

    def show(self, parse: Text, components: RenderableType, findings: Text) -> None:
        self.query_one("#panel-parse", Static).update(parse)
        self.query_one("#panel-components", Static).update(components)
        self.query_one("#panel-findings", Static).update(findings)


class SiteChecks:
    """What the side panel shows (see the module docstring): the screen parses the editor's text
    into it (debounced), and gives it the library and the cloud facts when they arrive."""

    def __init__(self) -> None:
        self.library: ComponentLibrary | None = None
        self.facts: CloudFacts | None = None
        #: the text the panel was last computed from, and what it found
        self.checked_text: str | None = None
        self.config: SiteConfig | None = None
        self.parse_error: SiteConfigError | None = None
        self.findings: tuple[Finding, ...] = ()
        self.verdict: SiteVerdict | None = None

    @property
    def definitions(self) -> Mapping[str, ComponentDefinition] | None:
        """The library's component definitions, once it is loaded."""
        return self.library.as_mapping() if self.library is not None else None

    def parse(self, text: str, naming: NamingProfile) -> None:
        """Parse `text` and check it again; a YAML error keeps the findings of the last text that parsed."""
        try:
            self.config = SiteConfig.parse(text, naming)
            self.parse_error = None
        except SiteConfigError as error:
            self.parse_error = error
        self.checked_text = text
        self.recheck(naming)

    def recheck(self, naming: NamingProfile) -> None:
        """Check the last text that parsed again (the library or the cloud facts changed)."""
        if self.config is not None and self.parse_error is None:
            self.verdict = verdict_of(self.config, naming=naming, definitions=self.definitions, facts=self.facts)
            self.findings = self.verdict.findings

    def cloud_note(self) -> str:
        facts = self.facts
        if facts is None:
            return "cloud: not consulted yet (IDs and MTU are checked once it answers)"
        parts = ["cloud: IDs checked against the cloud"]
        if facts.nic_mtu is not None:
            parts.append(f"NIC MTU {facts.nic_mtu}")
        text = ", ".join(parts)
        for note in facts.notes:
            text += f"\n  note: {note}"
        return text

    def subtitle(self, *, dirty: bool) -> str:
        """The editor's border subtitle: where the YAML error is, or that the text is unsaved."""
        error = self.parse_error
        return f"✘ line {error.line}, column {error.column}" if error is not None and error.line else (
            "● unsaved" if dirty else "")

    def show(self, panel: "SitePanel", *, dirty: bool) -> None:
        findings = findings_text(self.findings, self.cloud_note())
        if self.parse_error is not None:
            findings = Text.assemble(("(as of the last text that parsed)\n", "dim"), findings)
        verified = self.facts is not None and self.facts.identity is not None
        panel.show(parse_text(self.parse_error, dirty=dirty),
                   components_text(self.config, self.library, self.findings, verified=verified), findings)
