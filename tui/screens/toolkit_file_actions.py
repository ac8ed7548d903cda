"""The toolkit form's input file actions: ctrl+o fills the form from a file, ctrl+s saves it.

`InputFileActions` is the base of `ToolkitScreen` that holds them: loading fills every field and
network Select the file names (secrets it leaves out stay empty, to type in the form; inputs this
template does not declare are named and ignored); saving writes the spec's JSON shape mode 0600,
with or without the secrets (`procedures.toolkit.service.read_input_file` / `save_input_file`).
"""

from __future__ import annotations

from textual.widgets import Select

from tui.domain.input_file import InputFile
from tui.errors import SiteError
from tui.procedures.toolkit.service import NAME_FIELD, ToolkitForm, network_field, read_input_file, save_input_file
from tui.screens.base import SiteScreen
from tui.screens.toolkit_fields import FieldWidget, widget_id
from tui.screens.toolkit_files import FileChoice, InputFileModal

DEFAULT_FILE = "toolkit-inputs.json"


class InputFileActions(SiteScreen):
    """The load / save actions of the toolkit form (see the module docstring); the screen holds the form."""

    form: ToolkitForm | None
    fields: dict[str, FieldWidget]
    touched: set[str]
    file_path: str
    _building: bool

    def current_file(self) -> InputFile:
        """The form's values as an input file (the screen that holds the form answers)."""
        raise NotImplementedError

    def _revalidate(self) -> None:
        """Validate every field again (the screen that holds the form does)."""
        raise NotImplementedError

    def action_load_file(self) -> None:
        if self.form is None:
            return

        def chosen(choice: FileChoice | None) -> None:
            if choice is not None:
                self.load_file(choice.path)

        self.app.push_screen(InputFileModal("load", self.file_path), chosen)

    def load_file(self, path: str) -> None:
        """Fill the form from an input file; secrets it leaves out stay empty (to type here)."""
        form = self.form
        if form is None:
            return
        try:
            loaded = read_input_file(path, form.secrets)
        except SiteError as error:
            self.shell.report_error(error)
            return
        self.file_path = self.shell.input_file = str(loaded.path)
        file = loaded.file
        values = file.value_map()
        self._building = True
        self.fields[NAME_FIELD].value = file.name
        for name, widget in self.fields.items():
            if name != NAME_FIELD:
                widget.value = values.get(name, "")
        for network, ident in file.networks:
            found = self.query(f"#{widget_id(network_field(network))}")
            if found:
                known = {str(choice.id) for choice in form.choices}
                found.first(Select).value = ident if ident in known else Select.NULL
        self._building = False
        self.touched = set(self.fields) | {network_field(n) for n, _ in file.networks}
        self.call_after_refresh(self._revalidate)
        missing = [f.name for f in form.fields if f.secret and f.mandatory and not values.get(f.name)]
        unknown = form.unknown_inputs(values)
        message = f"Loaded {loaded.path.name}: {len(values)} values"
        if missing:
            message += f"; {len(missing)} secret(s) not in the file: type them in the form"
        if unknown:
            message += f"; not in this template (ignored): {', '.join(unknown)}"
        for warning in loaded.warnings:
            self.shell.toast(warning, severity="warning")
        self.shell.toast(message)

    def action_save_file(self) -> None:
        if self.form is None:
            return

        def chosen(choice: FileChoice | None) -> None:
            if choice is not None:
                self.save_file(choice)

        self.app.push_screen(InputFileModal("save", self.file_path), chosen)

    def save_file(self, choice: FileChoice) -> None:
        form = self.form
        if form is None:
            return
        omit = form.secrets if choice.omit_secrets else frozenset()
        try:
            path = save_input_file(choice.path, self.current_file(), omit=omit)
        except SiteError as error:
            self.shell.report_error(error)
            return
        self.file_path = self.shell.input_file = str(path)
        held = "secrets left out (asked when a step needs them)" if choice.omit_secrets else "secrets included"
        self.shell.toast(f"Saved {path} (mode 0600, {held})")
        self.saved(str(path))

    def saved(self, path: str) -> None:
        """The input file was written (the screen that holds the form may go on from there)."""
