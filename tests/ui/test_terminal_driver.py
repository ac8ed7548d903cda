"""The console's terminal driver overrides a private method of Textual's LinuxDriver
(widgets/terminal_driver.py): a Textual that renames it would silently undo the hang-up fix."""

from __future__ import annotations

import inspect

from textual.drivers.linux_driver import LinuxDriver

from widgets.terminal_driver import HangupSafeDriver


def test_the_overridden_sigcont_handler_still_exists_in_textual() -> None:
    assert callable(getattr(LinuxDriver, "_sigcont_application", None)), \
        "Textual no longer has LinuxDriver._sigcont_application: re-check widgets/terminal_driver.py"
    assert HangupSafeDriver._sigcont_application is not LinuxDriver._sigcont_application
    # the driver still registers it for SIGCONT (else overriding it would change nothing)
    source = inspect.getsource(LinuxDriver)
    assert "SIGCONT" in source and "self._sigcont_application" in source
