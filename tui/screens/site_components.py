"""The component flow (spec operation 9) as a modal: library, site variables, review, progress.

1. Library: every component of the component library, marked listed or not in `site_variables`,
   with its descriptions, site variables, appliances and inputs beside the list.
2. Site variables: one field per variable with its description from public.yaml, prefilled with
   the current values. IDs that the component's appliance will give may stay empty.
3. Review: the procedures plan it: downloads (or reuse) with `onemarketapp export`, the ACL rules
   with `oneacl create`, the site-variable changes with `ansible-vault edit`. Nothing has changed.
4. Progress: download, grants, core.yaml re-encrypted; cancel (escape) rolls a download back.

The modal returns True when core.yaml or the cloud changed (the screen reloads the file).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widgets import Button, Label, OptionList, Static
from textual.widgets.option_list import Option

from tui.domain.components import ComponentDefinition, ComponentLibrary
from tui.domain.site_config import MISSING, SiteConfig, SiteConfigError, lookup, parse_value
from tui.domain.site_fill import appliance_leaves
from tui.errors import SiteError
from tui.procedures.preview import Preview
from tui.procedures.progress import Progress
from tui.procedures.provision_component import GRANT_POLICY, ProvisionPlan, offer_component, plan_provision
from tui.procedures.site_config import VaultPassword, preview_enable_component
from tui.screens.error_text import error_text
from tui.screens.site_dialogs import local_text, localize, preview_text
from tui.screens.site_modal import SiteModal
from widgets.progress_panel import ProgressPanel
from widgets.validated_field import ValidatedField, first_invalid

_STEPS = ("-browse", "-form", "-review", "-running", "-finished")


def component_details(definition: ComponentDefinition, listed: bool) -> Text:
    """The library's description of one component (plain text from public.yaml)."""
    text = Text()
    text.append(definition.name, "bold")
    text.append("  listed in site_variables" if listed else "  not listed", "green" if listed else "yellow")
    if definition.short_description:
        text.append(f"\n{definition.short_description}")
    if definition.long_description:
        text.append(f"\n\n{definition.long_description}", "dim")
    leaves = definition.variable_paths()
    text.append("\n\nSite variables", "bold")
    if not leaves:
        text.append("\n  none: the component is only listed")
    for leaf, description in leaves:
        text.append(f"\n  {leaf}", "cyan")
        if description:
            text.append(f"  {description}", "dim")
    if definition.appliances:
        text.append("\n\nAppliances", "bold")
        for record in definition.appliance_record_ids():
            text.append(f"\n  {record}")
    if definition.inputs:
        text.append("\n\nInputs (set per trial network)", "bold")
        for item in definition.inputs:
            text.append(f"\n  {item.name}")
            if item.description:
                text.append(f"  {item.description}", "dim")
    if definition.maintainers:
        text.append(f"\n\nMaintainers: {', '.join(definition.maintainers)}", "dim")
    return text


class ComponentFlowModal(SiteModal[bool]):
    """Offer a component of the library (see the module docstring)."""

    AUTO_FOCUS = "#flow-components"
    #: seconds between checks of a downloading image
    POLL_INTERVAL: ClassVar[float] = 1.0
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "back", "Back / cancel", id="components.back")]
    DEFAULT_CSS = """
    ComponentFlowModal { align: center middle; }
    ComponentFlowModal > Vertical { width: 132; max-width: 98%; height: 94%; border: thick $primary;
        background: $surface; padding: 0 1; }
    ComponentFlowModal #flow-title { text-style: bold; width: 1fr; }
    ComponentFlowModal #flow-info { color: $text-muted; width: 1fr; }
    ComponentFlowModal #flow-browse { height: 1fr; }
    ComponentFlowModal #flow-components { width: 46; height: 1fr; }
    ComponentFlowModal #flow-details { width: 1fr; height: 1fr; padding: 0 1; }
    ComponentFlowModal #flow-form, ComponentFlowModal #flow-review, ComponentFlowModal #flow-progress-box { height: 1fr; }
    ComponentFlowModal #flow-result { height: auto; margin: 1 0 0 0; }
    ComponentFlowModal #flow-buttons { height: auto; align: right middle; }
    ComponentFlowModal #flow-buttons Button { margin: 0 0 0 2; }
    ComponentFlowModal #flow-browse, ComponentFlowModal #flow-form, ComponentFlowModal #flow-review,
    ComponentFlowModal #flow-progress-box { display: none; }
    ComponentFlowModal.-browse #flow-browse { display: block; }
    ComponentFlowModal.-form #flow-form { display: block; }
    ComponentFlowModal.-review #flow-review { display: block; }
    ComponentFlowModal.-running #flow-progress-box, ComponentFlowModal.-finished #flow-progress-box { display: block; }
    """

    class Reviewed(Message):
        def __init__(self, preview: Preview | None, plan: ProvisionPlan | None, error: SiteError | None) -> None:
            super().__init__()
            self.preview = preview
            self.plan = plan
            self.error = error

    class Stepped(Message):
        def __init__(self, event: Progress) -> None:
            super().__init__()
            self.event = event

    class Finished(Message):
        def __init__(self, error: SiteError | None) -> None:
            super().__init__()
            self.error = error

    def __init__(self, library: ComponentLibrary, config: SiteConfig, path: Path, password: VaultPassword, *, label: str = "",
                 clone: Path | None = None) -> None:
        super().__init__()
        self.library = library
        self.config = config
        self.path = path
        self.clone = clone
        self.password = password
        self.label = label
        self.definition: ComponentDefinition | None = None
        self.values: dict[str, Any] = {}
        self.plan: ProvisionPlan | None = None
        self.cancel_event = asyncio.Event()
        self.changed = False
        self.learned: dict[str, Any] = {}

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Offer a component", id="flow-title")
            yield Label(Content(f"Component library · {self.label}"), id="flow-info")
            with Horizontal(id="flow-browse"):
                yield OptionList(*self._options(), id="flow-components")
                with VerticalScroll(id="flow-details"):
                    yield Static("", id="flow-detail-text")
            with VerticalScroll(id="flow-form"):
                yield Static("", id="flow-form-intro")
                yield Vertical(id="flow-fields")
            with VerticalScroll(id="flow-review"):
                yield Static("", id="flow-review-text")
            with VerticalScroll(id="flow-progress-box"):
                yield ProgressPanel(id="flow-progress")
                yield Static("", id="flow-result")
            with Horizontal(id="flow-buttons"):
                yield Button("Cancel", id="flow-cancel")
                yield Button("Back", id="flow-back")
                yield Button("Next", id="flow-next", variant="primary")
                yield Button("Enable", id="flow-enable", variant="success")
                yield Button("Close", id="flow-close", variant="primary")

    def _options(self) -> list[Option]:
        listed = set(self.config.components())
        options = []
        for definition in self.library.definitions:
            on_list = definition.name in listed
            prompt = Text.assemble(("✔ " if on_list else "+ ", "green" if on_list else "yellow"), (definition.name, "bold"))
            if definition.short_description:
                prompt.append(f"\n  {definition.short_description}", "dim")
            options.append(Option(prompt, id=definition.name))
        return options

    def on_mount(self) -> None:
        self._step("-browse")
        components = self.query_one("#flow-components", OptionList)
        if self.library.definitions:
            components.highlighted = 0
            self._show_details(self.library.definitions[0])

    def _step(self, step: str) -> None:
        for name in _STEPS:
            self.set_class(name == step, name)
        buttons = {
            "-browse": ("#flow-cancel", "#flow-next"),
            "-form": ("#flow-cancel", "#flow-back", "#flow-next"),
            "-review": ("#flow-cancel", "#flow-back", "#flow-enable"),
            "-running": ("#flow-cancel",),
            "-finished": ("#flow-close",),
        }[step]
        for button in self.query("#flow-buttons Button").results(Button):
            button.display = f"#{button.id}" in buttons
        self.query_one("#flow-next", Button).label = "Review" if step == "-form" else "Next"
        self.query_one("#flow-cancel", Button).label = "Cancel download" if step == "-running" else "Cancel"

    @property
    def step(self) -> str:
        return next((s for s in _STEPS if self.has_class(s)), "")

    # ------------------------------------------------------------------ browse

    def _show_details(self, definition: ComponentDefinition) -> None:
        self.query_one("#flow-detail-text", Static).update(component_details(definition, definition.name in self.config.components()))

    @on(OptionList.OptionHighlighted, "#flow-components")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        definition = self.library.get(str(event.option.id))
        if definition is not None:
            self._show_details(definition)

    @on(OptionList.OptionSelected, "#flow-components")
    async def _selected(self, event: OptionList.OptionSelected) -> None:
        definition = self.library.get(str(event.option.id))
        if definition is not None:
            await self.open_form(definition)

    # ------------------------------------------------------------------ form

    async def open_form(self, definition: ComponentDefinition) -> None:
        self.definition = definition
        self.plan = None
        auto = appliance_leaves(definition)
        #: leaves of versioned groups: filled from the builds that are downloaded or offered (the review says
        #: which), a version no marketplace offers is left out; an ID typed here lists it anyway
        versioned = {leaf for leaf, _ in definition.variable_paths() if leaf.split(".", 1)[0] in definition.version_groups()}
        current = self.config.component_variables(definition.name)
        fields = self.query_one("#flow-fields", Vertical)
        await fields.remove_children()
        intro = Text.assemble(("Site variables of ", ""), (definition.name, "bold"))
        if not definition.variable_paths():
            intro.append("\nThis component has no site variables: it is only listed in site_variables.")
        if auto:
            intro.append(f"\nLeave {', '.join(sorted(auto))} empty to take them from the downloaded appliance.", "dim")
        if versioned:
            intro.append(f"\nOne group per version ({', '.join(definition.version_groups())}): leave them empty to fill them from the builds "
                         "a marketplace offers (the review says which); a version none offers is left out.", "dim")
        self.query_one("#flow-form-intro", Static).update(intro)
        new_fields = []
        for n, (leaf, description) in enumerate(definition.variable_paths()):
            found = lookup(current, leaf) if isinstance(current, dict) else MISSING
            value = "" if found is MISSING or found is None else str(found)
            optional = leaf in auto or leaf in versioned
            if optional and value in ("0", ""):
                value = ""  # the template's placeholder: the appliance gives the real ID
            new_fields.append(ValidatedField(
                leaf, value, help=description or "(no description in public.yaml)", check=self._checker(leaf, optional),
                placeholder="from the appliance" if leaf in auto else "from an offered build, else left out" if leaf in versioned else "",
                id=f"flow-field-{n}", validate_initial=False,
            ))
        await fields.mount_all(new_fields)
        self._step("-form")
        if new_fields:
            new_fields[0].focus()
        else:
            self.query_one("#flow-next", Button).focus()

    @staticmethod
    def _checker(leaf: str, optional: bool) -> Any:
        is_id = leaf.rsplit(".", 1)[-1].endswith("_id")

        def check(raw: str) -> str | None:
            if not raw.strip():
                return None if optional else "required: the component cannot be deployed without it"
            try:
                value = parse_value(raw)
            except SiteConfigError as error:
                return error.message
            if is_id and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                return "an ID is a whole number (0 or more)"
            return None

        return check

    def _form_values(self) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for field in self.query("#flow-fields ValidatedField").results(ValidatedField):
            if field.value.strip():
                values[field.label] = parse_value(field.value)
        return values

    # ------------------------------------------------------------------ review

    def review(self) -> None:
        assert self.definition is not None
        if first_invalid(self.query_one("#flow-fields")) is not None:
            return
        self.values = self._form_values()
        self.query_one("#flow-review-text", Static).update(Text("Planning: reading the marketplaces and the cloud…", "dim"))
        self._step("-review")
        self.query_one("#flow-enable", Button).disabled = True
        self._review_worker(self.definition, dict(self.values))

    @work(exclusive=True, group="components-review", exit_on_error=False)
    async def _review_worker(self, definition: ComponentDefinition, values: dict[str, Any]) -> None:
        site = self.shell.site
        try:
            plan = await plan_provision(site, definition) if definition.appliances else None
            variables = await preview_enable_component(self.path, self.password, definition, values, site.naming,
                                                       from_appliance=plan.fills() if plan else appliance_leaves(definition))
        except SiteError as error:
            self.post_message(self.Reviewed(None, None, error))
            return
        changes = (plan.preview().changes if plan else ()) + tuple(c for c in variables.changes if not c.description.startswith("appliance "))
        warnings = (plan.preview().warnings if plan else ()) + variables.warnings
        user = f" for cloud user {plan.user.name}" if plan else ""
        preview = localize(Preview(f"Enable {definition.name}{user}", changes, warnings=warnings), self.clone, self.password)
        self.post_message(self.Reviewed(preview, plan, None))

    @on(Reviewed)
    def _reviewed(self, message: Reviewed) -> None:
        text = self.query_one("#flow-review-text", Static)
        if message.error is not None:
            text.update(error_text(message.error))
            return
        assert message.preview is not None
        self.plan = message.plan
        text.update(preview_text(message.preview, GRANT_POLICY if message.plan else ""))
        enable = self.query_one("#flow-enable", Button)
        enable.disabled = False
        enable.focus()

    # ------------------------------------------------------------------ running

    def start(self) -> None:
        if self.definition is None or self.step != "-review":
            return
        steps: list[str] = []
        for appliance in self.plan.appliances if self.plan else ():
            if appliance.download is not None:
                steps += [f"{appliance.record.name}: {s}" for s in appliance.download.step_names]
            else:
                steps.append(f"{appliance.record.name}: download")
        self.query_one("#flow-progress", ProgressPanel).set_steps([f"enable {self.definition.name}", *steps])
        self._step("-running")
        self.changed = True
        self._run_worker(self.definition, dict(self.values), self.plan)

    @work(exclusive=True, group="components-run", exit_on_error=False)
    async def _run_worker(self, definition: ComponentDefinition, values: dict[str, Any], plan: ProvisionPlan | None) -> None:
        site = self.shell.site
        try:
            async for event in offer_component(site, self.path, self.password, definition, values, plan=plan, cancel=self.cancel_event,
                                               poll_interval=self.POLL_INTERVAL):
                self.post_message(self.Stepped(event))
        except SiteError as error:
            self.post_message(self.Finished(error))
            return
        self.post_message(self.Finished(None))

    @on(Stepped)
    def _stepped(self, message: Stepped) -> None:
        event = message.event
        if "values" in event.data:
            self.learned = dict(event.data["values"])
        self.query_one("#flow-progress", ProgressPanel).update_step(event.step, event.state, local_text(event.message, self.clone))

    @on(Finished)
    def _finished(self, message: Finished) -> None:
        self._step("-finished")
        result = self.query_one("#flow-result", Static)
        name = self.definition.name if self.definition else ""
        if message.error is None:
            text = Text.assemble(("✔ ", "bold green"), (name, "bold"), " is offered: listed in site_variables, core.yaml re-encrypted.")
            if self.learned:
                text.append("\n  from the appliance: " + ", ".join(f"{k} = {v}" for k, v in self.learned.items()))
            text.append("\nSubmit the site (ctrl+t) to push it to the site branch.", "dim")
        else:
            text = error_text(message.error)
        result.update(text)
        self.call_after_refresh(self.query_one("#flow-close", Button).focus)  # once it is displayed

    # ------------------------------------------------------------------ buttons and keys

    @on(Button.Pressed, "#flow-next")
    async def _next(self) -> None:
        if self.step == "-browse":
            components = self.query_one("#flow-components", OptionList)
            if components.highlighted is not None:
                definition = self.library.get(str(components.get_option_at_index(components.highlighted).id))
                if definition is not None:
                    await self.open_form(definition)
        elif self.step == "-form":
            self.review()

    @on(Button.Pressed, "#flow-enable")
    def _enable(self) -> None:
        self.start()

    @on(Button.Pressed, "#flow-back")
    def _back(self) -> None:
        self.action_back()

    @on(Button.Pressed, "#flow-cancel")
    def _cancel(self) -> None:
        if self.step == "-running":
            self._cancel_run()
        else:
            self.dismiss(self.changed)

    @on(Button.Pressed, "#flow-close")
    def _close(self) -> None:
        self.dismiss(self.changed)

    def _cancel_run(self) -> None:
        if not self.cancel_event.is_set():
            self.cancel_event.set()
            self.query_one("#flow-result", Static).update(Text("Cancelling: deleting what the download created…", "bold yellow"))

    def worker_failed(self, worker: Any, error: BaseException) -> None:
        """An unexpected failure (already reported): the flow ends where Close is offered."""
        if self.step in ("-review", "-running"):
            self._step("-finished")
            self.query_one("#flow-result", Static).update(Text.assemble(("✘ Failed: ", "bold red"),
                                                                        str(error) or type(error).__name__))

    def action_back(self) -> None:
        step = self.step
        if step == "-running":
            self._cancel_run()
        elif step == "-review":
            self._step("-form")
        elif step == "-form":
            self._step("-browse")
            self.query_one("#flow-components", OptionList).focus()
        else:
            self.dismiss(self.changed)
