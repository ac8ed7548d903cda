"""The component flow (spec operation 9) as a modal: library, site variables, review, progress.

1. Library: every component of the component library, marked listed or not in `site_variables`,
   with its descriptions, site variables, appliances and inputs beside the list.
2. Site variables: one field per variable with its description from public.yaml, prefilled with
   the current values. IDs that the component's appliance will give may stay empty.
3. Review: the `EnableComponent` operation (tui.procedures.components.enable_operation) plans it: downloads
   (or reuse) with `onemarketapp export`, the ACL rules with `oneacl create`, the site-variable
   changes with `ansible-vault edit`. Nothing has changed.
4. Progress: download, grants, core.yaml re-encrypted; cancel (escape) rolls a download back.

Planning, running, cancel, failures and the close are the operation modal's (`OperationModal`);
this modal keeps its two form steps (library, site variables) and its result view. It returns
True when core.yaml or the cloud changed (the screen reloads the file).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Button, Label, OptionList, Static
from textual.widgets.option_list import Option

from tui.domain.components import ComponentDefinition, ComponentLibrary
from tui.domain.site_config import MISSING, SiteConfig, SiteConfigError, lookup, parse_value
from tui.domain.site_fill import appliance_leaves
from tui.errors import SiteError
from tui.procedures.components.enable_operation import ComponentEnabled, EnableComponent, EnableReview
from tui.procedures.components.provision import GRANT_POLICY
from tui.procedures.preview import Preview
from tui.procedures.progress import Progress
from tui.procedures.site.config import VaultPassword
from tui.screens.error_text import error_text
from tui.screens.operation_modal import OperationModal
from tui.screens.site_dialogs import local_text, localize, preview_text
from widgets.progress_panel import ProgressPanel
from widgets.validated_field import ValidatedField, first_invalid

_STEPS = ("-browse", "-form", "-review", "-running", "-finished")
#: the buttons each step shows
_BUTTONS = {
    "-browse": ("#flow-cancel", "#flow-next"),
    "-form": ("#flow-cancel", "#flow-back", "#flow-next"),
    "-review": ("#flow-cancel", "#flow-back", "#flow-enable"),
    "-running": ("#flow-cancel",),
    "-finished": ("#flow-close",),
}


#: the label of the component form's cloud-user field
USER_FIELD = "cloud user (app_automation_cloud_username)"


def _named(raw: str) -> str | None:
    return None if raw.strip() else "required: the cloud user the appliances are granted to (not guessed)"


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


class ComponentFlowModal(OperationModal[EnableReview, ComponentEnabled]):
    """Offer a component of the library (see the module docstring)."""

    PREFIX = "flow"
    RUN_BUTTON = "enable"
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
        #: the automation cloud user the appliances are granted to (typed; never guessed)
        self.cloud_user = ""
        #: which form step shows before the review: "browse", "form", or "review" (a plan that failed)
        self.view = "browse"

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
                yield Vertical(id="flow-user")
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
        components = self.query_one("#flow-components", OptionList)
        if self.library.definitions:
            components.highlighted = 0
            self._show_details(self.library.definitions[0])

    @property
    def step(self) -> str:
        if self.phase in ("planning", "ready") or (self.phase == "form" and self.view == "review"):
            return "-review"
        if self.phase == "form":
            return f"-{self.view}"
        return f"-{self.phase}"

    @property
    def learned(self) -> dict[str, Any]:
        """The site-variable values the appliances gave (once it ran)."""
        return dict(self.result.learned) if self.result is not None else {}

    def _go(self, view: str) -> None:
        self.view = view
        if self.phase != "form":
            self.invalidate()  # back from a review: its plan no longer holds
        self.paint_buttons(self.phase)

    def paint_buttons(self, phase: str) -> None:
        step = self.step
        for name in _STEPS:
            self.set_class(name == step, name)
        buttons = _BUTTONS[step]
        for button in self.query("#flow-buttons Button").results(Button):
            button.display = f"#{button.id}" in buttons
        self.query_one("#flow-next", Button).label = "Review" if step == "-form" else "Next"
        self.query_one("#flow-cancel", Button).label = "Cancel download" if step == "-running" else "Cancel"
        self.query_one("#flow-cancel", Button).disabled = False
        self.query_one("#flow-enable", Button).disabled = phase != "ready"

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
        user_box = self.query_one("#flow-user", Vertical)
        await user_box.remove_children()
        if definition.appliances:
            user = ValidatedField(
                USER_FIELD, self.cloud_user, check=_named,
                help="the automation cloud user its images and templates are granted to: app_automation_cloud_username "
                     "of the toolkit's input file (never taken from the site record or a live service)",
                placeholder="app_automation_cloud_username", id="flow-cloud-user", validate_initial=False)
            await user_box.mount(user)
            if not self.cloud_user:
                new_fields.insert(0, user)
        self._go("form")
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
        if first_invalid(self.query_one("#flow-user")) is not None or first_invalid(self.query_one("#flow-fields")) is not None:
            return
        self.values = self._form_values()
        users = list(self.query("#flow-user ValidatedField").results(ValidatedField))
        self.cloud_user = users[0].value.strip() if users else self.cloud_user
        self.view = "review"
        self.show_preview_text(Text("Planning: reading the marketplaces and the cloud…", "dim"))
        self.plan_operation(EnableComponent(self.path, self.password, self.definition, dict(self.values),
                                            cloud_user=self.cloud_user or None, poll_interval=self.POLL_INTERVAL))

    def show_preview_text(self, renderable: Any) -> None:
        self.query_one("#flow-review-text", Static).update(renderable)

    def show_plan(self, plan: EnableReview, preview: Preview) -> None:
        self.show_preview_text(preview_text(localize(preview, self.clone, self.password),
                                            GRANT_POLICY if plan.provision else ""))

    # ------------------------------------------------------------------ running and result

    def show_step(self, event: Progress) -> None:
        self.query_one("#flow-progress", ProgressPanel).update_step(event.step, event.state, local_text(event.message, self.clone))

    def show_result(self, result: ComponentEnabled) -> None:
        text = Text.assemble(("✔ ", "bold green"), (result.component, "bold"), " is offered: listed in site_variables, core.yaml re-encrypted.")
        if result.learned:
            text.append("\n  from the appliance: " + ", ".join(f"{k} = {v}" for k, v in result.learned.items()))
        text.append("\nSubmit the site (ctrl+t) to push it to the site branch.", "dim")
        self.show_result_text(text)

    def show_failure(self, error: SiteError) -> None:
        self.show_result_text(error_text(error))

    def cancelling(self) -> None:
        self.show_result_text(Text("Cancelling: deleting what the download created…", "bold yellow"))

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

    @on(Button.Pressed, "#flow-back")
    def _back(self) -> None:
        self.action_back()

    def cancel_operation(self) -> None:
        """Cancel: stops a running offer (a download is rolled back), else closes the flow."""
        if self.running:
            super().cancel_operation()
        else:
            self.dismiss(self.changed)

    def action_back(self) -> None:
        step = self.step
        if step == "-running":
            self.cancel_operation()
        elif step == "-review":
            self._go("form")
        elif step == "-form":
            self._go("browse")
            self.query_one("#flow-components", OptionList).focus()
        else:
            self.dismiss(self.changed)
