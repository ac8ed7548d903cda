"""The base of every console modal: the app as a typed `Shell` and the one error path.

Modals are not `SiteScreen`s, so a worker of theirs that raised used to vanish (the multi-VM
move's `NameError` did, and its modal could not be closed). A `SiteModal` reports every worker
failure like screens do (`Shell.report_error`: toast or error modal), then calls
`worker_failed()`, where a modal puts itself back in a state the operator can leave. Being a
`widgets.dialog.Dialog`, its buttons have accelerator keys and a focus that shows.
"""

from __future__ import annotations

from typing import Any, TypeVar

from textual.worker import Worker, WorkerState

from tui.screens.shell import Shell, shell_of
from widgets.dialog import Dialog

ResultType = TypeVar("ResultType")


class SiteModal(Dialog[ResultType]):
    """A modal of the console (see the module docstring)."""

    @property
    def shell(self) -> Shell:
        return shell_of(self.app)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.shell.report_error(event.worker.error)
            self.worker_failed(event.worker, event.worker.error)

    def worker_failed(self, worker: Worker[Any], error: BaseException) -> None:
        """After the report: leave the modal closable (override where a phase must end)."""
