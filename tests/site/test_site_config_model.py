"""core.yaml as a round-trip document: parse errors with positions, edits that keep comments and order."""

from __future__ import annotations

import difflib

import pytest

from tui.domain.naming import NamingProfile
from tui.domain.site_config import SiteConfig, SiteConfigError, cloud_fill, config_diff, mask_secrets
from tui.sim.repos import template_core_yaml


def changed_lines(before: str, after: str) -> list[str]:
    return [line for line in difflib.ndiff(before.splitlines(), after.splitlines()) if line[:2] in ("- ", "+ ")]


@pytest.fixture
def template() -> SiteConfig:
    return SiteConfig.parse(template_core_yaml())


def test_unchanged_round_trip_is_byte_identical(template: SiteConfig) -> None:
    assert template.edit({}).text == template.text
    # setting a value to what it already is changes nothing either
    assert template.with_value("site_vxlan_mtu", 1500).text == template.text


def test_reading_values(template: SiteConfig) -> None:
    assert template.get("site_vxlan_mtu") == 1500
    assert template.get("site_networks_id.default") == 0
    assert template.get("site_clusters.0") == 0
    assert template.get("site_s3_server.endpoint") == "https://<objectstore ip>:9000"
    assert template.get("nope.nothing", "fallback") == "fallback"
    assert template.has("site_variables.tn_vxlan") and template.get("site_variables.tn_vxlan") is None
    assert template.components() == ("tn_init", "tn_vxlan", "vnet", "tn_bastion", "vm_kvm")
    assert template.component_variables("tn_bastion") == {"template_id": 0, "image_id": 0}
    assert template.component_variables("absent") is None


def test_data_is_a_copy(template: SiteConfig) -> None:
    template.data["site_domain"] = "changed"
    assert template.get("site_domain") == "trial.mysite.internal"
    template.component_variables("tn_bastion")["image_id"] = 7
    assert template.component_variables("tn_bastion") == {"template_id": 0, "image_id": 0}


def test_a_text_parsed_again_is_the_same_value(template: SiteConfig) -> None:
    # parsed once: every read is a copy (above), so the steps of one setup pass share it
    assert SiteConfig.parse(template_core_yaml()) is template
    other = SiteConfig.parse(template_core_yaml(), NamingProfile(site_variables_key="components"))
    assert other is not template and other.components() == ()
    with pytest.raises(SiteConfigError):  # a failure is not kept: it says so each time
        SiteConfig.parse("a: [1\n")
    with pytest.raises(SiteConfigError):
        SiteConfig.parse("a: [1\n")


def test_edit_changes_only_the_edited_lines(template: SiteConfig) -> None:
    after = template.edit({"site_s3_server.endpoint": "https://10.0.0.21:9000", "site_vxlan_guest_mtu": 1400})
    assert changed_lines(template.text, after.text) == [
        "- site_vxlan_guest_mtu: 1450",
        "+ site_vxlan_guest_mtu: 1400",
        '-   endpoint: "https://<objectstore ip>:9000"',
        '+   endpoint: "https://10.0.0.21:9000"',  # double quotes kept
    ]
    # every comment line of the template survives
    comments = [line for line in template.text.splitlines() if line.lstrip().startswith("#")]
    assert all(line in after.text.splitlines() for line in comments)


def test_new_component_lands_before_the_next_heading(template: SiteConfig) -> None:
    after = template.with_component("ran_sim", {"template_id": 7, "image_id": 8})
    lines = after.text.splitlines()
    start = lines.index("  ran_sim:")
    assert lines[start + 1 : start + 3] == ["    template_id: 7", "    image_id: 8"]
    # the object-store heading still precedes site_s3_server, right after the new component
    assert lines[start + 3] == ""
    assert lines[start + 4].startswith("# Object store of the toolkit")
    assert after.components()[-1] == "ran_sim"
    assert len(changed_lines(template.text, after.text)) == 3


def test_new_top_level_key_goes_to_the_end(template: SiteConfig) -> None:
    after = template.with_value("site_extra.flag", True)
    assert after.text.endswith("  insecure: true\nsite_extra:\n  flag: true\n")


def test_explicit_nulls_stay_explicit(template: SiteConfig) -> None:
    after = template.with_component("core_net_cluster")
    assert "  core_net_cluster: null\n" in after.text
    assert "  tn_vxlan: null     # required: only listed\n" in after.text
    bare = SiteConfig.parse("site_variables:\n  tn_vxlan:\n  tn_bastion:\n    template_id: 1\n")
    assert bare.with_value("site_domain", "x").text == "site_variables:\n  tn_vxlan:\n  tn_bastion:\n    template_id: 1\nsite_domain: x\n"


def test_component_listed_with_null_gets_variables() -> None:
    config = SiteConfig.parse("site_variables:\n  tn_bastion: null  # todo\n  vm_kvm: null\n")
    after = config.with_component("tn_bastion", {"template_id": 3, "image_id": 4})
    assert after.component_variables("tn_bastion") == {"template_id": 3, "image_id": 4}
    assert "# todo" in after.text
    assert after.components() == ("tn_bastion", "vm_kvm")


def test_merge_keeps_other_variables_and_nested_groups() -> None:
    config = SiteConfig.parse('site_variables:\n  cluster:\n    "129":\n      template_id: 5  # old\n')
    after = config.with_component("cluster", {"131.template_id": 9})
    assert after.component_variables("cluster") == {"129": {"template_id": 5}, "131": {"template_id": 9}}
    assert "template_id: 5  # old" in after.text
    replaced = config.with_component("cluster", {"131": {"template_id": 9}}, merge=False)
    assert replaced.component_variables("cluster") == {"131": {"template_id": 9}}


def test_list_elements_and_integer_keys() -> None:
    config = SiteConfig.parse("site_clusters:\n    - 0\nids:\n  129: a\n")
    after = config.edit({"site_clusters.1": 100, "site_clusters.0": 2, "ids.129": "b"})
    assert after.get("site_clusters") == [2, 100]
    assert after.text == "site_clusters:\n    - 2\n    - 100\nids:\n  129: b\n"  # indentation of the list kept
    with pytest.raises(SiteConfigError, match="out of range"):
        config.with_value("site_clusters.5", 1)


def test_setting_below_a_scalar_is_refused(template: SiteConfig) -> None:
    with pytest.raises(SiteConfigError, match="holds a single value"):
        template.with_value("site_domain.sub", 1)
    with pytest.raises(SiteConfigError, match="not a valid path"):
        template.with_value("a..b", 1)


@pytest.mark.parametrize(
    ("text", "line", "column", "words"),
    [
        ("site_domain: x\nsite_dns: [1, 2\n", 3, 1, "expected ','"),
        ("a: 1\nb:\n\t- 2\n", 3, 1, "'\\t'"),
        ("a: 1\na: 2\n", 2, 1, "duplicate key"),
        ("a: 1\n  b: 2\n", 2, 4, "mapping values are not allowed"),
        ('a: "open\n', 2, 1, "end of stream"),
        ("- just\n- a list\n", 1, 1, "top level must be a mapping"),
        ("$ANSIBLE_VAULT;1.1;AES256\n3132\n", 1, 1, "decrypt it first"),
    ],
)
def test_parse_errors_have_positions(text: str, line: int, column: int, words: str) -> None:
    with pytest.raises(SiteConfigError) as caught:
        SiteConfig.parse(text)
    assert (caught.value.line, caught.value.column) == (line, column)
    assert words in caught.value.message
    assert str(caught.value).startswith(f"line {line}, column {column}: ")


def test_empty_text_is_an_empty_mapping() -> None:
    assert SiteConfig.parse("").data == {}
    assert SiteConfig.parse("").with_value("a", 1).text == "a: 1\n"


def test_naming_profile_names_the_component_map() -> None:
    naming = NamingProfile(site_variables_key="site_available_components")
    config = SiteConfig.parse(template_core_yaml(naming), naming)
    assert config.variables_key == "site_available_components"
    assert "tn_bastion" in config.components()
    assert config.with_component("ran_sim").get("site_available_components.ran_sim", "absent") is None


def test_diff_masks_secrets_unless_revealed() -> None:
    old = "site_variables:\n  switch:\n    registry_token: old-secret\n    template_id: 1\n"
    new = "site_variables:\n  switch:\n    registry_token: new-secret  # rotated\n    template_id: 2\n"
    diff = config_diff(old, new)
    assert "old-secret" not in diff and "new-secret" not in diff
    assert "+    template_id: 2" in diff
    assert "registry_token: ***  # rotated" in diff
    assert "new-secret" in config_diff(old, new, reveal=True)
    assert mask_secrets("site_admin_ssh_public_key: ssh-ed25519 AAAA\n") == "site_admin_ssh_public_key: ssh-ed25519 AAAA\n"


def test_fill_from_cloud_values(template: SiteConfig) -> None:
    changes = cloud_fill(objectstore_address="10.0.0.21", gate_endpoint="http://10.11.32.104:5030")
    assert changes == [("site_s3_server.endpoint", "https://10.0.0.21:9000"), ("site_onegate", "10.11.32.104")]
    filled = template.edit(changes)
    assert '  endpoint: "https://10.0.0.21:9000"' in filled.text and 'site_onegate: "10.11.32.104"' in filled.text
    assert cloud_fill(objectstore_address="2001:db8::5")[0][1] == "https://[2001:db8::5]:9000"
    assert cloud_fill() == []


def test_an_edit_made_again_is_the_same_and_changes_no_reading(template: SiteConfig) -> None:
    # edits copy the text's loaded tree and are kept: neither may leak into a reading or another edit
    first = template.with_component("tn_bastion", {"template_id": 5, "image_id": 6})
    assert template.component_variables("tn_bastion") == {"template_id": 0, "image_id": 0}
    assert template.with_component("tn_bastion", {"template_id": 5, "image_id": 6}).text == first.text
    as_text = template.with_component("tn_bastion", {"template_id": "5", "image_id": 6})  # the exact type counts
    assert as_text.text != first.text and as_text.component_variables("tn_bastion")["template_id"] == "5"
    assert first.component_variables("tn_bastion") == {"template_id": 5, "image_id": 6}
    assert template.edit({}).text == template.text == template_core_yaml()
