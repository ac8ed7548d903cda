"""The toolkit's 23 inputs: names from the naming profile, the form, and validation."""

from __future__ import annotations

import pytest

from tui.domain.input_specs import InputType, template_inputs
from tui.domain.naming import DEFAULT_NAMING, NamingProfile
from tui.domain.toolkit_inputs import (
    OTHER_GROUP,
    TOOLKIT_INPUTS,
    Component,
    Severity,
    check_field,
    errors_only,
    form_fields,
    input_name,
    meaning_of,
    missing_from_template,
    prefill,
    secret_names,
    validate_inputs,
)

from .builders import CERT, KEY

SPEC_NAMES = [
    "app_objectstore_hostname", "app_objectstore_opts", "app_objectstore_tls_cert", "app_objectstore_tls_key",
    "app_objectstore_root_user", "app_objectstore_root_password", "app_automation_username",
    "app_automation_password", "app_automation_sites_token", "app_automation_cloud_endpoint",
    "app_automation_cloud_flow_endpoint", "app_automation_cloud_username", "app_automation_cloud_password",
    "app_automation_cloud_insecure", "app_manager_admin_user", "app_manager_admin_password",
    "app_manager_sites_branch", "app_manager_deployment_site", "app_timeseries_user", "app_timeseries_password",
    "app_timeseries_org", "app_timeseries_bucket", "app_timeseries_token",
]


def good_values() -> dict[str, str]:
    return {
        "app_objectstore_hostname": "s3.site.org,*.s3.site.org",
        "app_objectstore_opts": '--console-address ":9001"',
        "app_objectstore_tls_cert": "",
        "app_objectstore_tls_key": "",
        "app_objectstore_root_user": "admin",
        "app_objectstore_root_password": "s3cret-password",
        "app_automation_username": "admin",
        "app_automation_password": "s3cret-password",
        "app_automation_sites_token": "vault-secret",
        "app_automation_cloud_endpoint": "http://10.0.0.1:2633/RPC2",
        "app_automation_cloud_flow_endpoint": "http://10.0.0.1:2474",
        "app_automation_cloud_username": "toolkit",
        "app_automation_cloud_password": "pw",
        "app_automation_cloud_insecure": "YES",
        "app_manager_admin_user": "admin",
        "app_manager_admin_password": "pw",
        "app_manager_sites_branch": "uma",
        "app_manager_deployment_site": "uma",
        "app_timeseries_user": "admin",
        "app_timeseries_password": "ts-password",  # InfluxDB 2: at least 8 characters
        "app_timeseries_org": "site",
        "app_timeseries_bucket": "results",
        "app_timeseries_token": "tok",
    }


def test_the_spec_lists_23_inputs_with_default_names() -> None:
    assert len(TOOLKIT_INPUTS) == 23
    assert [m.name(DEFAULT_NAMING) for m in TOOLKIT_INPUTS] == SPEC_NAMES


def test_names_follow_the_naming_profile() -> None:
    naming = NamingProfile(input_prefix="oneapp_", role_objectstore="minio", role_automation="jenkins")
    names = [m.name(naming) for m in TOOLKIT_INPUTS]
    assert names[0] == "oneapp_minio_hostname"
    assert "oneapp_jenkins_cloud_endpoint" in names
    assert not any(n.startswith("app_") or "objectstore" in n or "automation" in n for n in names)
    assert input_name(naming, Component.AUTOMATION, "cloud_insecure") == "oneapp_jenkins_cloud_insecure"


def test_secrets() -> None:
    secrets = secret_names(DEFAULT_NAMING)
    assert secrets == {
        "app_objectstore_tls_key", "app_objectstore_root_password", "app_automation_password",
        "app_automation_sites_token", "app_automation_cloud_password", "app_manager_admin_password",
        "app_timeseries_password", "app_timeseries_token",
    }
    extra = template_inputs({"user_inputs": {"app_extra_pin": "M|password|PIN"}})
    assert "app_extra_pin" in secret_names(DEFAULT_NAMING, extra)


def test_meaning_lookup() -> None:
    assert "RPC2" in meaning_of(Component.AUTOMATION, "cloud_endpoint").meaning
    with pytest.raises(KeyError):
        meaning_of(Component.MANAGER, "nope")


def test_form_without_template_has_the_spec_inputs_grouped() -> None:
    fields = form_fields(DEFAULT_NAMING)
    assert [f.name for f in fields] == SPEC_NAMES
    assert [f.group for f in fields][:1] == ["Object store"]
    assert {f.group for f in fields} == {"Object store", "Automation server", "Trial-network manager", "Time-series database"}
    by_name = {f.name: f for f in fields}
    assert by_name["app_automation_password"].secret and by_name["app_automation_password"].spec.type is InputType.PASSWORD
    assert not by_name["app_objectstore_tls_cert"].mandatory and by_name["app_objectstore_tls_cert"].multiline
    assert not any(f.in_template for f in fields)


def test_form_from_a_template_with_an_unknown_extra_input() -> None:
    body = {
        "user_inputs": {
            "app_timeseries_token": "M|password|Token",
            "app_automation_cloud_endpoint": "M|text|RPC endpoint",
            "app_objectstore_region": "O|text|Region||eu-south",
            "app_automation_password": "M|password|Jenkins password (min 8 chars)",
            "site_colour": "O|list|Colour|red,blue|red",
        }
    }
    fields = form_fields(DEFAULT_NAMING, template_inputs(body))
    assert [f.name for f in fields] == [
        "app_objectstore_region",  # unknown, grouped by its component prefix
        "app_automation_password",
        "app_automation_cloud_endpoint",
        "app_timeseries_token",
        "site_colour",  # unknown, no component
    ]
    region, password, endpoint, token, colour = fields
    assert region.meaning is None and region.group == "Object store" and region.default == "eu-south"
    assert region.help == "Region"
    assert colour.group == OTHER_GROUP and colour.component is None
    assert all(f.in_template for f in fields)
    assert "RPC2" in endpoint.help and "RPC endpoint" in endpoint.help
    assert password.spec.length_rule.min_length == 8
    missing = missing_from_template(DEFAULT_NAMING, template_inputs(body))
    assert "app_objectstore_hostname" in missing and "app_timeseries_token" not in missing
    assert len(missing) == 20


def test_good_values_have_no_problems() -> None:
    fields = form_fields(DEFAULT_NAMING)
    assert validate_inputs(fields, good_values(), DEFAULT_NAMING) == ()


def test_with_tls_pair() -> None:
    values = good_values() | {"app_objectstore_tls_cert": CERT, "app_objectstore_tls_key": KEY}
    assert validate_inputs(form_fields(DEFAULT_NAMING), values, DEFAULT_NAMING) == ()


def problems_for(values: dict[str, str], fields=None) -> dict[str, list[tuple[Severity, str]]]:
    out: dict[str, list[tuple[Severity, str]]] = {}
    for p in validate_inputs(fields or form_fields(DEFAULT_NAMING), values, DEFAULT_NAMING):
        out.setdefault(p.name, []).append((p.severity, p.message))
    return out


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("app_objectstore_hostname", "", "required"),
        ("app_objectstore_hostname", "s3 site", "no spaces"),
        ("app_objectstore_root_user", "", "required"),
        ("app_objectstore_root_password", "two\nlines", "one line"),
        ("app_automation_cloud_endpoint", "http://10.0.0.1:2633", "/RPC2"),
        ("app_automation_cloud_flow_endpoint", "http://10.0.0.1:2474/x", "no path"),
        ("app_automation_cloud_insecure", "NO", "must be YES"),
        ("app_automation_cloud_insecure", "maybe", "YES or NO"),
        ("app_manager_sites_branch", "my branch", "branch name"),
        ("app_manager_deployment_site", "a/b", "one directory name"),
        ("app_objectstore_tls_cert", CERT, None),  # error lands on the empty key
    ],
)
def test_each_bad_value_is_reported_on_its_field(name: str, value: str, message: str | None) -> None:
    problems = problems_for(good_values() | {name: value})
    if message is None:
        assert "app_objectstore_tls_key" in problems
        assert "needs its key" in problems["app_objectstore_tls_key"][0][1]
    else:
        errors = [m for s, m in problems.get(name, []) if s is Severity.ERROR]
        assert errors and message in errors[0], problems


def test_https_endpoints_warn_but_do_not_block() -> None:
    values = good_values() | {
        "app_automation_cloud_endpoint": "https://one.site.org:2633/RPC2",
        "app_automation_cloud_flow_endpoint": "https://one.site.org:2474",
        "app_automation_cloud_insecure": "NO",
    }
    problems = validate_inputs(form_fields(DEFAULT_NAMING), values, DEFAULT_NAMING)
    assert errors_only(problems) == ()
    (warning,) = problems
    assert warning.name == "app_automation_cloud_insecure" and warning.severity is Severity.WARNING
    assert "untested" in warning.message


def test_deployment_site_differing_from_branch_warns() -> None:
    problems = problems_for(good_values() | {"app_manager_deployment_site": "other"})
    assert problems["app_manager_deployment_site"] == [(Severity.WARNING, "usually the same as the branch name (uma)")]


def test_template_types_and_password_rules_are_enforced() -> None:
    body = {
        "user_inputs": {
            "app_automation_password": "M|password|Password (min 8 chars)",
            "app_automation_cloud_insecure": "M|boolean|Insecure",
            "app_extra_replicas": "O|range|Replicas|1..3|1",
            "app_extra_mode": "O|list|Mode|a,b",
            "broken": "Z|nonsense",
        }
    }
    fields = form_fields(DEFAULT_NAMING, template_inputs(body))
    values = {
        "app_automation_password": "short",
        "app_automation_cloud_insecure": "yes",
        "app_extra_replicas": "7",
        "app_extra_mode": "",
        "broken": "x",
    }
    problems = problems_for(values, fields)
    assert problems["app_automation_password"] == [(Severity.ERROR, "must be at least 8 characters (has 5)")]
    assert problems["app_automation_cloud_insecure"][0] == (Severity.ERROR, "must be YES or NO")
    assert "between 1 and 3" in problems["app_extra_replicas"][0][1]
    assert "app_extra_mode" not in problems  # optional and empty
    assert problems["broken"][0][0] is Severity.WARNING and "unreadable" in problems["broken"][0][1]


def test_check_field_alone() -> None:
    (field,) = [f for f in form_fields(DEFAULT_NAMING) if f.name == "app_automation_cloud_insecure"]
    assert check_field(field, good_values(), DEFAULT_NAMING) == ()
    (problem,) = check_field(field, good_values() | {field.name: "NO"}, DEFAULT_NAMING)
    assert problem.severity is Severity.ERROR


def test_prefill_uses_what_the_console_knows() -> None:
    fields = form_fields(DEFAULT_NAMING)
    values = prefill(
        fields, DEFAULT_NAMING, rpc_endpoint="http://10.0.0.1:2633/RPC2", flow_endpoint="http://10.0.0.1:2474",
        cloud_username="oneadmin",
    )
    assert values["app_automation_cloud_endpoint"] == "http://10.0.0.1:2633/RPC2"
    assert values["app_automation_cloud_flow_endpoint"] == "http://10.0.0.1:2474"
    assert values["app_automation_cloud_username"] == "oneadmin"
    assert values["app_automation_cloud_insecure"] == "YES"
    assert values["app_objectstore_root_password"] == ""
    tls = prefill(fields, DEFAULT_NAMING, rpc_endpoint="https://h:1/RPC2", flow_endpoint="https://h:2")
    assert tls["app_automation_cloud_insecure"] == "NO"


def test_prefill_keeps_template_defaults() -> None:
    body = {"user_inputs": {"app_automation_cloud_username": "M|text|User||deployer"}}
    fields = form_fields(DEFAULT_NAMING, template_inputs(body))
    assert prefill(fields, DEFAULT_NAMING, cloud_username="oneadmin") == {"app_automation_cloud_username": "deployer"}
