"""The toolkit screen: the instantiation form (operation 3) and the live deployment (operation 4).

The form is built from the toolkit's service template (`procedures.toolkit.service.load_form`): every
input the template declares, joined with the spec's meaning as help and grouped by component
(object store, automation server, manager, time series, then any other input), plus the
service instance name (suggested with the toolkit version) and one network Select per template
network, preselected with the site's default network when the console can tell which it is.
Values start from the template's defaults and what the console knows (the endpoints it is
connected to, its user).

- Inline validation: a field shows its reason once touched; Deploy (ctrl+g) validates every
  field, focuses the first invalid one and stays blocked while any is invalid. Then it checks the
  inputs against the site (`procedures.toolkit.input_checks`: the cloud user exists, the default
  network is the bridged OAM /24 and not the VXLAN one, the sites branch exists, the vault secret
  is the branch's vault password); their findings sit next to the fields like the others while
  the values they checked are unchanged. Warnings (a loopback endpoint, TLS endpoints, a branch
  still to create) are listed above the form and do not block.
- Secrets are masked with a reveal toggle (ctrl+r in the field, or its Show button).
- ctrl+o loads an input file (the spec's JSON shape; a malformed one says line and column),
  ctrl+s saves one (mode 0600; secrets may be left out, and are then typed here or asked by
  `sitetk toolkit deploy`).
- Deploy shows the preview (what is created and `oneflow-template instantiate <id> <file>`) in a
  confirmation, then switches to the deployment view: the service and each role followed live,
  the VMs recorded, the automation key captured; esc stops following without touching the
  service; a failed service shows its log. `k` opens the key view.

The whole screen changes the cloud, so `--read-only` hides it (registry `mutates=True`).

The screen is split by what each part holds: this module the form (its fields, values, validation);
`toolkit_file_actions` loading and saving input files (`InputFileActions`); `toolkit_deploy_actions`
the site check, confirmation, deploy and follow (`DeployActions`); `toolkit_deploy` the deployment
view; `toolkit_fields` the field widgets.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Mapping

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Button, ContentSwitcher, Label, Select, Static
from textual.worker import Worker

from tui.domain.input_file import InputFile
from tui.domain.services import ServiceTemplate
from tui.domain.severity import Severity
from tui.domain.site_record import SiteRecord
from tui.domain.toolkit_inputs import Problem
from tui.errors import SiteError
from tui.procedures.site_record import load_site_record
from tui.procedures.toolkit.input_checks import SiteCheckReport
from tui.procedures.toolkit.service import (
    NAME_FIELD,
    ToolkitForm,
    ToolkitTemplateMissing,
    find_toolkit_template,
    list_toolkit_templates,
    load_form,
    network_field,
)
from tui.screens.toolkit_deploy import DeploymentView
from tui.screens.toolkit_deploy_actions import DeployActions
from tui.screens.toolkit_fields import FieldWidget, MultilineField, field_help, field_widget, widget_id
from tui.screens.toolkit_file_actions import DEFAULT_FILE
from widgets.validated_field import FieldHead, ValidatedField, show_text

NAME_HELP = ("Name of the service instance. It is advisable to include the toolkit version in it; "
             "names do not affect later steps.")


def download_hint(appliance: str) -> str:
    """The keys to the Marketplace screen and its download, for a form with no toolkit in the cloud
    (issue 20 item 9): read from the screen registry and the marketplace's bindings."""
    from tui.screens.marketplace import MarketplaceScreen
    from tui.screens.registry import SCREENS

    market = next(spec for spec in SCREENS if spec.target.endswith(f":{MarketplaceScreen.__name__}"))
    download = next(b.key for b in MarketplaceScreen.BINDINGS if isinstance(b, Binding) and b.action == "download")
    return (f"Download the {appliance} appliance first, on the {market.title} screen: press : and type {market.name}, "
            f"enter; select {appliance} (the newest build) and press {download}. This form reads the cloud again "
            "when you come back.")


class ToolkitScreen(DeployActions):
    """The form and the deployment view (see the module docstring)."""

    SCREEN_NAME = "toolkit"
    TITLE = "Toolkit"
    CSS_PATH = "toolkit.tcss"
    MUTATING_ACTIONS = frozenset({"deploy", "load_file", "save_file", "move_stuck"})
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+g", "deploy", "Deploy", id="toolkit.deploy", tooltip="check every input, preview, deploy"),
        Binding("ctrl+o", "load_file", "Load file", id="toolkit.load"),
        Binding("ctrl+s", "save_file", "Save file", id="toolkit.save"),
        Binding("ctrl+f", "follow", "Follow recorded", id="toolkit.follow",
                tooltip="follow the recorded deployment again (it is not changed)"),
        Binding("k", "key_view", "Key view", id="toolkit.key-view"),
        Binding("m", "move_stuck", "Move DB VM", id="toolkit.move",
                tooltip="move the database VM the deployment waits for to a compatible host"),
        Binding("escape", "escape", "Stop / back", id="toolkit.escape"),
        Binding("r", "refresh", "Read again", id="toolkit.refresh",
                tooltip="read the toolkit's service template again (values typed are kept)"),
    ]

    @dataclass
    class Loaded(Message):
        form: ToolkitForm
        templates: tuple[ServiceTemplate, ...]
        record: SiteRecord | None

    @dataclass
    class LoadFailed(Message):
        error: SiteError

    def __init__(self) -> None:
        super().__init__()
        self.form: ToolkitForm | None = None
        self.record: SiteRecord | None = None
        self.templates: tuple[ServiceTemplate, ...] = ()
        self.fields: dict[str, FieldWidget] = {}
        #: each template network's Select and the label of its reason, by network name (the form's
        #: values and checks read them at every keystroke: no query of the whole screen)
        self._networks: dict[str, tuple[Select[Any], Label]] = {}
        self.touched: set[str] = set()
        self.submitted = False
        self.load_pending = True
        #: the form's widgets are mounted and filled (tests and scenes wait for it)
        self.ready = False
        self.load_error: SiteError | None = None
        self.file_path = DEFAULT_FILE
        self._carry: dict[str, str] = {}
        #: each field's value right after the form was built (what counts as untouched)
        self._initial: dict[str, str] = {}
        self._cancel = asyncio.Event()
        self._building = False
        #: the last site check and the values it checked (its problems count while they are unchanged)
        self.site_report: SiteCheckReport | None = None
        self._site_key: tuple[Any, ...] | None = None
        #: the last problems found: (form, site report, what was asked, problems)
        self._problems: tuple[Any, SiteCheckReport | None, tuple[Any, ...], tuple[Problem, ...]] | None = None
        self.site_checking = False
        #: opened by the setup checklist for its input file: saving returns there
        self.for_setup = False
        #: what the status line and the warnings above the form show (painted again only when it changes)
        self._shown_status: tuple[Text, Text] | None = None

    # ------------------------------------------------------------------ layout

    def compose_body(self) -> ComposeResult:
        yield Static(Text("Loading the toolkit's service template …"), id="tk-header")
        with ContentSwitcher(initial="tk-form-pane", id="tk-switcher"):
            with Vertical(id="tk-form-pane"):
                yield Static("", id="tk-warnings")
                yield VerticalScroll(id="tk-form")
                with Horizontal(id="tk-buttons"):
                    yield Static("", id="tk-status")
                    yield Button("Load file", id="tk-load", compact=True)
                    yield Button("Save file", id="tk-save", compact=True)
                    yield Button("Deploy", id="tk-deploy", variant="primary", compact=True)
            yield DeploymentView(id="tk-deploy-pane")

    def on_mount(self) -> None:
        self.load()

    def on_screen_resume(self) -> None:
        """Shown again: a form that could not be built (no toolkit in the cloud yet) is read again,
        so a download made meanwhile (setup checklist, marketplace) is found."""
        super().on_screen_resume()
        if self.load_error is not None and not self.load_pending:
            self.action_refresh()

    def action_refresh(self) -> None:
        """Read the service template again; the values typed so far are kept."""
        if self.showing_deployment or self.load_pending:
            return
        if self.form is not None:
            self._carry = {**self.input_values(), NAME_FIELD: self.service_name,
                           **{network_field(k): v for k, v in self.network_values().items()}}
        self.load_pending = True
        self.load_error = None
        self.query_one("#tk-header", Static).update(Text("Reading the toolkit's service template again …"))
        self.load(self.form.template.id if self.form is not None else None)

    # ------------------------------------------------------------------ loading

    @work(exclusive=True, group="toolkit-load", exit_on_error=False)
    async def load(self, template_id: int | None = None) -> None:
        try:
            templates = await list_toolkit_templates(self.site)
            template = await find_toolkit_template(self.site, template_id)
            form = await load_form(self.site, template)
            record = load_site_record(self.site.settings)
        except SiteError as error:
            self.post_message(self.LoadFailed(error))
            return
        self.post_message(self.Loaded(form, templates, record))

    async def on_toolkit_screen_loaded(self, message: Loaded) -> None:
        self.ready = False
        self.load_error = None
        self.form, self.templates, self.record = message.form, message.templates, message.record
        self.shell.mark_refreshed()
        await self._build(message.form)
        self._header()
        self._refresh_status()
        self.load_pending = False
        self.ready = True

    def on_toolkit_screen_load_failed(self, message: LoadFailed) -> None:
        self.load_pending = False
        self.load_error = message.error
        detail = message.error.detail
        if isinstance(message.error, ToolkitTemplateMissing):
            detail = download_hint(self.site.naming.toolkit_appliance_name)
        header = Text.assemble(("✘ ", "bold red"), (message.error.title, "bold"), "\n", detail)
        self.query_one("#tk-header", Static).update(header)

    def _header(self) -> None:
        form = self.form
        if form is None:
            return
        template = form.template
        text = Text.assemble(
            ("Service template ", "bold"), (f"{template.id} {template.name!r}", "bold"),
            f"  ·  platform {form.platform_version} ({'6.x custom_attrs' if form.platform_version.startswith('6') else '7.x user_inputs'})"
            f"  ·  {len(form.fields)} inputs, roles {', '.join(r.name for r in template.roles)}")
        if form.missing_inputs:
            text.append(f"\n⚠ the template does not declare {', '.join(form.missing_inputs)}", "yellow")
        if self.record is not None:
            r = self.record
            text.append("\n")
            text.append(f"Recorded deployment: service {r.service_id} {r.service_name!r} {r.state or '?'}", "cyan")
            text.append("  (deploying again from the same inputs follows it, it creates no other; ctrl+f follows it, "
                        ":key opens its key view)", "dim")
        if self.for_setup:
            text.append("\nFor the setup: fill the form, then ctrl+s saves the input file (mode 0600) and "
                        "returns to the checklist, which continues with it.", "bold cyan")
        self.query_one("#tk-header", Static).update(text)
        self.refresh_bindings()

    def saved(self, path: str) -> None:
        """Saved for the setup: back to the checklist (it takes the file when shown)."""
        if self.for_setup:
            self.for_setup = False
            self._header()
            self.shell.open_screen("setup")

    async def _build(self, form: ToolkitForm) -> None:
        """Mount the form's widgets (keeping values typed before a template change)."""
        self._building = True
        container = self.query_one("#tk-form", VerticalScroll)
        carry = self._carry or {}
        await container.remove_children()
        self.fields = {}
        self._networks = {}
        widgets: list[Any] = []
        if len(self.templates) > 1:
            options: list[tuple[str, int | str]] = [(f"{t.id} {t.name}", t.id) for t in self.templates]
            widgets.append(Label("Service template", classes="tk-label"))
            widgets.append(Select(options, value=form.template.id, allow_blank=False, id="tk-template"))
        widgets.append(Label("Service instance", classes="tk-group"))
        name = field_widget("name *", carry.get(NAME_FIELD, form.suggested_name), check=self._checker(NAME_FIELD),
                            secret=False, multiline=False, help=NAME_HELP, id="in-name")
        self.fields[NAME_FIELD] = name
        widgets.append(name)
        for spec in form.networks:
            default = carry.get(network_field(spec.name), form.network_defaults.get(spec.name, ""))
            options = [(c.label, str(c.id)) for c in form.choices]
            select: Select[Any] = Select(options, prompt="Choose the default network", value=default or Select.NULL,
                                         id=widget_id(network_field(spec.name)), classes="tk-network")
            reason = Label("", classes="field-reason")
            self._networks[spec.name] = (select, reason)
            box = Vertical(
                FieldHead(f"network {spec.name} *", f"The site's default network for {spec.name}: its OAM /24 on "
                          "the bridge shared with the management interface.", classes="field-label"),
                Horizontal(select, reason),
                classes="tk-network-field",
            )
            widgets.append(box)
        for group, fields in form.groups():
            widgets.append(Label(group, classes="tk-group"))
            for f in fields:
                marker = " *" if f.mandatory else ""
                secret_mark = " (secret)" if f.secret else ""
                value = carry.get(f.name, form.values.get(f.name, ""))
                placeholder = "type it here, or leave it out of a saved file" if f.secret else f.default
                widget = field_widget(f"{f.name}{marker}{secret_mark}", value, check=self._checker(f.name),
                                      secret=f.secret, multiline=f.multiline, help=field_help(f), id=widget_id(f.name),
                                      placeholder=placeholder)
                self.fields[f.name] = widget
                widgets.append(widget)
        await container.mount_all(widgets)
        self._initial = {name: widget.value for name, widget in self.fields.items()}
        self._initial.update({network_field(k): v for k, v in self.network_values().items()})
        self._carry = {}
        self.touched = set()
        self.submitted = False
        self._building = False
        first = self.fields.get(NAME_FIELD)
        if first is not None and not self.showing_deployment:
            first.focus(scroll_visible=False)

    # ------------------------------------------------------------------ values and validation

    def network_values(self) -> dict[str, str]:
        out: dict[str, str] = {}
        if self.form is None:
            return out
        for spec in self.form.networks:
            found = self._networks.get(spec.name)
            if found is not None and found[0].is_mounted:
                value = found[0].value
                out[spec.name] = "" if value is Select.NULL else str(value)
        return out

    def input_values(self) -> dict[str, str]:
        return {name: widget.value for name, widget in self.fields.items() if name != NAME_FIELD}

    @property
    def service_name(self) -> str:
        widget = self.fields.get(NAME_FIELD)
        return widget.value if widget is not None else ""

    def current_file(self) -> InputFile:
        assert self.form is not None
        values = self.input_values()
        networks = tuple((name, ident) for name, ident in self.network_values().items() if ident)
        return InputFile(self.service_name, tuple((f.name, values.get(f.name, "")) for f in self.form.fields),
                         networks).for_platform(self.form.platform_version)

    def _values_key(self, inputs: Mapping[str, str] | None = None, networks: Mapping[str, str] | None = None
                    ) -> tuple[Any, ...]:
        inputs = self.input_values() if inputs is None else inputs
        networks = self.network_values() if networks is None else networks
        return (tuple(sorted(inputs.items())), tuple(sorted(networks.items())))

    def problems(self) -> tuple[Problem, ...]:
        """The form's own problems, plus the site checks' while the values they checked are unchanged.

        Kept for the values they were found for: every touched field's check asks again after each
        keystroke, and checking the whole form once per field made typing cost the square of the
        form's size."""
        if self.form is None:
            return ()
        inputs, networks = self.input_values(), self.network_values()
        values = self._values_key(inputs, networks)
        asked = (self.service_name, values, self._site_key)
        kept = self._problems
        if kept is not None and kept[0] is self.form and kept[1] is self.site_report and kept[2] == asked:
            return kept[3]
        own = self.form.problems(self.service_name, inputs, networks)
        if self.site_report is not None and self._site_key == values:
            own += self.site_report.problems
        self._problems = (self.form, self.site_report, asked, own)
        return own

    def _checker(self, name: str) -> Callable[[str], str | None]:
        """The field's check: the first error the form reports for it (the form checks inputs
        together: the TLS pair, the insecure flag against the endpoints)."""

        def check(_: str) -> str | None:
            if self._building or self.form is None:
                return None
            errors = [p.message for p in self.problems() if p.name == name and p.severity is Severity.ERROR]
            return errors[0] if errors else None

        return check

    def _revalidate(self) -> None:
        """Show reasons on touched fields (every field once Deploy was tried): the form is checked
        once, and each field shows the first error found for it (what its own check would say)."""
        problems = self.problems()
        errors: dict[str, str] = {}
        for p in problems:
            if p.severity is Severity.ERROR:
                errors.setdefault(p.name, p.message)
        for name, widget in self.fields.items():
            if self.submitted or name in self.touched:
                widget.show_reason(None if self._building else errors.get(name))
        if self.form is not None:
            for spec in self.form.networks:
                key = network_field(spec.name)
                found = self._networks.get(spec.name)
                if found is not None and found[1].is_mounted:
                    reason = errors.get(key, "") if self.submitted or key in self.touched else ""
                    if str(found[1].content) != reason:  # the same reason again: no layout of the form
                        show_text(found[1], Content(reason))
        self._refresh_status(problems)

    def _refresh_status(self, problems: tuple[Problem, ...] | None = None) -> None:
        if self.form is None:
            return
        problems = self.problems() if problems is None else problems
        errors = [p for p in problems if p.severity is Severity.ERROR]
        warnings = [p for p in problems if p.severity is Severity.WARNING]
        status = Text()
        if self.site_checking:
            status.append("◐ checking the inputs against the site…", "yellow")
        elif errors and (self.submitted or self.touched):
            status.append(f"✘ {len(errors)} to fix", "bold red")
        elif errors:
            status.append(f"{len(errors)} to fill", "yellow")
        elif self.site_report is not None and self._site_key == self._values_key():
            status.append(f"✔ every input valid; {self.site_report.summary()}", "green")
        else:
            status.append("✔ every input well-formed (ctrl+g checks them against the site)", "green")
        status.append("  ·  ctrl+r in a secret shows or hides it", "dim")
        text = Text()
        for n, p in enumerate(warnings):
            text.append("\n" if n else "")
            text.append("⚠ ", "yellow")
            text.append(f"{p.name}: {p.message}")
        if self._shown_status == (status, text):
            return  # a keystroke that changes neither: painting them again laid the whole form out again
        self._shown_status = (status, text)
        self.query_one("#tk-status", Static).update(status, layout=False)  # one line whatever it says (toolkit.tcss)
        box = self.query_one("#tk-warnings", Static)
        if warnings:
            box.update(text)
            box.display = True
        else:
            box.display = False

    def _field_changed(self, widget: Any) -> None:
        if self._building:
            return
        name = next((n for n, w in self.fields.items() if w is widget), None)
        # an input announces its first value once mounted: only a different value is a touch
        if name is not None and (name in self.touched or widget.value != self._initial.get(name, widget.value)):
            self.touched.add(name)
        self._revalidate()

    def on_validated_field_changed(self, event: ValidatedField.Changed) -> None:
        self._field_changed(event.field)

    def on_multiline_field_changed(self, event: MultilineField.Changed) -> None:
        self._field_changed(event.field)

    @on(Select.Changed, ".tk-network")
    def network_changed(self, event: Select.Changed) -> None:
        if self._building or self.form is None:
            return
        for spec in self.form.networks:
            key = network_field(spec.name)
            if event.select.id == widget_id(key):
                value = "" if event.value is Select.NULL else str(event.value)
                if key in self.touched or value != self._initial.get(key, value):
                    self.touched.add(key)
        self._revalidate()

    @on(Select.Changed, "#tk-template")
    def template_changed(self, event: Select.Changed) -> None:
        if self._building or self.form is None or event.value is Select.NULL or event.value == self.form.template.id:
            return
        self._carry = {**self.input_values(), NAME_FIELD: self.service_name,
                       **{network_field(k): v for k, v in self.network_values().items()}}
        self.load(int(event.value))  # type: ignore[call-overload]

    def first_invalid(self) -> Any:
        """Validate everything; focus and return the first invalid widget (None: all valid)."""
        self.submitted = True
        self._revalidate()
        errors = {p.name for p in self.problems() if p.severity is Severity.ERROR}
        if not errors:
            return None
        assert self.form is not None
        order = [NAME_FIELD, *(network_field(s.name) for s in self.form.networks), *(f.name for f in self.form.fields)]
        for name in order:
            if name in errors:
                widget: Widget | None = self.fields.get(name)
                if widget is None:
                    found = self.query(f"#{widget_id(name)}")
                    widget = found.first() if found else None
                if widget is not None:
                    widget.focus()
                return widget
        return None

    # ------------------------------------------------------------------ actions

    def on_button_pressed(self, event: Button.Pressed) -> None:
        actions = {"tk-load": self.action_load_file, "tk-save": self.action_save_file, "tk-deploy": self.action_deploy}
        action = actions.get(event.button.id or "")
        if action is not None:
            event.stop()
            action()

    def worker_failed(self, worker: Worker[Any], error: BaseException) -> None:
        if worker.group == "toolkit-load" and isinstance(error, SiteError):
            self.post_message(self.LoadFailed(error))
            return
        if worker.group == "toolkit-site-check":
            self.site_checking = False
            self._refresh_status()
        super().worker_failed(worker, error)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("load_file", "save_file", "deploy", "follow", "refresh") and self.showing_deployment:
            return False
        if action == "follow" and self.record is None:
            return False
        if action == "move_stuck" and (not self.showing_deployment or self.deploy_view.move_vm_id is None):
            return False
        return super().check_action(action, parameters)
