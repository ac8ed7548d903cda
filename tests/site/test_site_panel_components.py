"""The site screen's component list (issue 20 item 11b): a component is "complete" only when every
ID its definition needs is set and, when verified, exists; a missing ID is never shown beside
"complete"."""

from __future__ import annotations

from rich.console import Console

from tui.domain.components import ComponentDefinition, ComponentLibrary, VariableSpec
from tui.domain.severity import Severity
from tui.domain.site_checks import Finding
from tui.domain.site_config import SiteConfig
from tui.screens.site_panel import components_text

CLUSTER = ComponentDefinition(
    "cluster", appliances=("cluster_appliance",),
    site_variables=(VariableSpec("template_id", "the VM template"), VariableSpec("image_id", "the image"),
                    VariableSpec("size", "nodes")),
)
VERSIONED = ComponentDefinition(
    "k8s", appliances=("k8s_appliance",),
    site_variables=(VariableSpec("129", children=(VariableSpec("template_id", "1.29 template"),)),
                    VariableSpec("131", children=(VariableSpec("template_id", "1.31 template"),))),
)
LIBRARY = ComponentLibrary((CLUSTER, VERSIONED))


def rendered(text: str, findings: tuple[Finding, ...] = (), *, verified: bool = True) -> str:
    console = Console(width=160, record=True, color_system=None)
    console.print(components_text(SiteConfig.parse(text), LIBRARY, findings, verified=verified))
    return console.export_text()


def line_of(text: str, name: str) -> str:
    return next(line for line in text.splitlines() if line.split()[1:2] == [name])


def test_a_component_with_a_missing_id_is_not_complete() -> None:
    for missing in ("image_id: ''", "image_id: null", ""):
        text = rendered(f"site_variables:\n  cluster:\n    template_id: 5\n    {missing}\n    size: 3\n")
        line = line_of(text, "cluster")
        assert "complete" not in line.replace("incomplete", ""), text
        assert "✘ cluster  incomplete" in line and "image_id" in line, text


def test_every_id_set_and_verified_is_complete() -> None:
    text = rendered("site_variables:\n  cluster:\n    template_id: 5\n    image_id: 7\n    size: 3\n")
    assert "✔ cluster  complete" in text
    # not verified against the cloud: never "complete"
    assert "cluster  not verified" in rendered("site_variables:\n  cluster:\n    template_id: 5\n    image_id: 7\n",
                                               verified=False)
    # verified, and the cloud says an ID does not exist: incomplete
    gone = (Finding(Severity.ERROR, "site_variables.cluster.image_id", "image 7 does not exist"),)
    assert "✘ cluster  incomplete" in rendered("site_variables:\n  cluster:\n    template_id: 5\n    image_id: 7\n", gone)


def test_only_the_version_groups_the_site_lists_need_their_ids() -> None:
    assert "✔ k8s  complete" in rendered("site_variables:\n  k8s:\n    '131':\n      template_id: 9\n")
    assert "✘ k8s  incomplete" in rendered("site_variables:\n  k8s:\n    '131':\n      template_id: ''\n")
