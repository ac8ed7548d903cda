"""The toolkit's 23 instantiation inputs: meanings, grouping, form fields and validation.

Input names are `<input prefix><component word>_<suffix>`, the prefix and component words taken
from the naming profile (the spec's `app_` and objectstore/automation/manager/timeseries by
default); this module holds only the suffixes. Secrets are the spec's passwords and tokens, plus
the object store's TLS private key (a private key is a secret although the spec's table does not
say so).

The form is generated from the service template's own inputs (`input_specs.template_inputs`)
joined with these meanings: a template input the spec knows gets its meaning, checks and
component; one it does not know still gets a field, grouped under its component when its name
starts with `<prefix><component word>_`, otherwise under "Other". With no template at hand the
form has the spec's 23 inputs.

Validation gives `Problem`s (ERROR blocks submission, WARNING is shown only): required values,
the declared type, length rules from the description, and per-input checks (`input_checks`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Iterable, Mapping, Sequence

from tui.domain import input_checks as checks
from tui.domain.input_specs import InputSpec, InputType
from tui.domain.naming import NamingProfile
from tui.domain.severity import Severity


class Component(str, Enum):
    """A toolkit component; the value is the naming-profile field holding its word."""

    OBJECTSTORE = "role_objectstore"
    AUTOMATION = "role_automation"
    MANAGER = "role_manager"
    TIMESERIES = "role_timeseries"

    def word(self, naming: NamingProfile) -> str:
        return str(getattr(naming, self.value))

    @property
    def heading(self) -> str:
        """The form group's heading."""
        return _TITLES[self]


_TITLES = {
    Component.OBJECTSTORE: "Object store",
    Component.AUTOMATION: "Automation server",
    Component.MANAGER: "Trial-network manager",
    Component.TIMESERIES: "Time-series database",
}

OTHER_GROUP = "Other"


class Check(str, Enum):
    """The value check an input gets on top of its declared type."""

    NONE = "none"
    SINGLE_LINE = "single line"
    HOST_NAMES = "host names"
    TLS_CERT = "TLS certificate"
    TLS_KEY = "TLS key"
    RPC_ENDPOINT = "RPC endpoint"
    FLOW_ENDPOINT = "flow endpoint"
    INSECURE = "insecure flag"
    BRANCH = "branch name"
    DIRECTORY = "directory name"


@dataclass(frozen=True)
class InputMeaning:
    component: Component
    #: the name after `<prefix><component word>_`
    suffix: str
    meaning: str
    secret: bool = False
    check: Check = Check.SINGLE_LINE
    #: may be left empty (the spec's TLS pair and extra options)
    optional: bool = False
    multiline: bool = False

    def name(self, naming: NamingProfile) -> str:
        return naming.input_name(f"{self.component.word(naming)}_{self.suffix}")

    def default_spec(self, naming: NamingProfile) -> InputSpec:
        """The description a template would give: mandatory text or password."""
        return InputSpec(
            name=self.name(naming),
            mandatory=not self.optional,
            type=InputType.PASSWORD if self.secret else InputType.TEXT,
            description=self.meaning,
        )


_O, _A, _M, _T = Component.OBJECTSTORE, Component.AUTOMATION, Component.MANAGER, Component.TIMESERIES

#: The spec's 23 inputs, in the spec's order.
TOOLKIT_INPUTS: tuple[InputMeaning, ...] = (
    InputMeaning(_O, "hostname", "Comma-separated host names or host patterns of the object store (the names of its TLS certificate, e.g. localhost,minio-*.example.net).", check=Check.HOST_NAMES),
    InputMeaning(_O, "opts", "Extra server options string, for example one that sets the console listen address.", optional=True),
    InputMeaning(_O, "tls_cert", "TLS certificate. The empty string is used when TLS is not configured.", check=Check.TLS_CERT, optional=True, multiline=True),
    InputMeaning(_O, "tls_key", "TLS key. The empty string is used when TLS is not configured.", secret=True, check=Check.TLS_KEY, optional=True, multiline=True),
    InputMeaning(_O, "root_user", "Object store admin user."),
    InputMeaning(_O, "root_password", "Object store admin password.", secret=True),
    InputMeaning(_A, "username", "Login of the automation server web interface."),
    InputMeaning(_A, "password", "Password of the automation server web interface.", secret=True),
    InputMeaning(_A, "sites_token", "The secret used to encrypt the site's branch in the sites repository with vault encryption: the vault password of its core.yaml (the vault password file holds the same secret), not the repository's access token.", secret=True),
    InputMeaning(_A, "cloud_endpoint", "Cloud platform RPC endpoint of the site, shape http://<host>:<port>/RPC2.", check=Check.RPC_ENDPOINT),
    InputMeaning(_A, "cloud_flow_endpoint", "Cloud platform multi-VM-service endpoint of the site, shape http://<host>:<port>.", check=Check.FLOW_ENDPOINT),
    InputMeaning(_A, "cloud_username", "Cloud platform user that the automation server uses to deploy trial networks."),
    InputMeaning(_A, "cloud_password", "Password of that user.", secret=True),
    InputMeaning(_A, "cloud_insecure", "Set to YES unless the cloud endpoints are TLS-protected. TLS-protected endpoints are untested.", check=Check.INSECURE),
    InputMeaning(_M, "admin_user", "Manager admin user."),
    InputMeaning(_M, "admin_password", "Manager admin password.", secret=True),
    InputMeaning(_M, "sites_branch", "Default branch of the sites repository for this site.", check=Check.BRANCH),
    InputMeaning(_M, "deployment_site", "Name of the directory in the sites repository that holds core.yaml. Usually the same as the branch name.", check=Check.DIRECTORY),
    InputMeaning(_T, "user", "Time-series database admin user."),
    InputMeaning(_T, "password", "Time-series database admin password.", secret=True),
    InputMeaning(_T, "org", "Organization name."),
    InputMeaning(_T, "bucket", "Name of the default bucket."),
    InputMeaning(_T, "token", "Time-series database access token.", secret=True),
)


@dataclass(frozen=True)
class ComponentRule:
    """What a component's own software refuses in an input, and where the rule comes from: the
    toolkit then deploys, and the role never becomes READY (issue 20 item 6)."""

    min_length: int = 0
    #: characters the value must not contain
    forbidden: str = ""
    #: characters the value must not start with
    not_first: str = ""
    source: str = ""

    def check(self, value: str) -> str | None:
        if len(value) < self.min_length:
            return f"at least {self.min_length} characters ({len(value)} given): {self.source}"
        bad = sorted({ch for ch in value if ch in self.forbidden})
        if bad:
            return f"must not contain {' or '.join(repr(ch) for ch in bad)}: {self.source}"
        if self.not_first and value[:1] in self.not_first:
            return f"must not start with {value[:1]!r}: {self.source}"
        return None


_MINIO = "MinIO's internal/auth/credentials.go"
_INFLUX_BUCKETS = 'InfluxDB 2 "Bucket naming restrictions" (docs.influxdata.com/influxdb/v2/admin/buckets/create-bucket)'
#: the components' own rules on their inputs (the object store is MinIO, the time-series database InfluxDB 2)
COMPONENT_RULES: dict[tuple[Component, str], ComponentRule] = {
    (_O, "root_user"): ComponentRule(3, source=f"MinIO refuses a shorter root user (accessKeyMinLen = 3, {_MINIO})"),
    (_O, "root_password"): ComponentRule(8, source=f"MinIO refuses a shorter root password (secretKeyMinLen = 8, {_MINIO})"),
    (_T, "password"): ComponentRule(8, source="InfluxDB 2's setup refuses a password shorter than 8 characters"),
    (_T, "bucket"): ComponentRule(
        2, forbidden='"/', not_first="_",
        source=f"{_INFLUX_BUCKETS}: two or more characters, not starting with _, no \"; a / kept the time-series role "
               "from READY on a real 7.0.2 run (issue 20)"),
}


def component_rule(field: "FormField") -> ComponentRule | None:
    if field.meaning is None:
        return None
    return COMPONENT_RULES.get((field.meaning.component, field.meaning.suffix))


def meaning_of(component: Component, suffix: str) -> InputMeaning:
    for meaning in TOOLKIT_INPUTS:
        if meaning.component is component and meaning.suffix == suffix:
            return meaning
    raise KeyError(f"no toolkit input {component.name}/{suffix}")


def input_name(naming: NamingProfile, component: Component, suffix: str) -> str:
    """The full name of a spec input, e.g. (AUTOMATION, "cloud_endpoint") -> app_automation_cloud_endpoint."""
    return meaning_of(component, suffix).name(naming)


def meanings_by_name(naming: NamingProfile) -> dict[str, InputMeaning]:
    return {meaning.name(naming): meaning for meaning in TOOLKIT_INPUTS}


def secret_names(naming: NamingProfile, specs: Iterable[InputSpec] = ()) -> frozenset[str]:
    """Names whose values are secrets: the spec's, plus every password-typed template input."""
    return frozenset(m.name(naming) for m in TOOLKIT_INPUTS if m.secret) | frozenset(
        spec.name for spec in specs if spec.secret
    )


@dataclass(frozen=True)
class FormField:
    name: str
    spec: InputSpec
    meaning: InputMeaning | None
    component: Component | None
    #: the service template declares this input (False: built from the spec's table)
    in_template: bool

    @property
    def group(self) -> str:
        return self.component.heading if self.component else OTHER_GROUP

    @property
    def secret(self) -> bool:
        return self.spec.secret or bool(self.meaning and self.meaning.secret)

    @property
    def mandatory(self) -> bool:
        return self.spec.mandatory

    @property
    def check(self) -> Check:
        return self.meaning.check if self.meaning else Check.NONE

    @property
    def multiline(self) -> bool:
        return bool(self.meaning and self.meaning.multiline)

    @property
    def help(self) -> str:
        """The spec's meaning, then the template's description when it adds something."""
        parts = [self.meaning.meaning] if self.meaning else []
        if self.spec.description and (not self.meaning or self.spec.description != self.meaning.meaning):
            parts.append(self.spec.description)
        if self.spec.problem:
            parts.append(f"(template description unreadable: {self.spec.problem})")
        return " ".join(parts) or self.name

    @property
    def default(self) -> str:
        return self.spec.default


def _component_of(name: str, naming: NamingProfile) -> Component | None:
    for component in Component:
        if name.startswith(naming.input_name(f"{component.word(naming)}_")):
            return component
    return None


def form_fields(naming: NamingProfile, template_specs: Sequence[InputSpec] | None = None) -> tuple[FormField, ...]:
    """The form: the template's inputs joined with the spec's meanings, grouped by component.

    Order: components in the spec's order (object store, automation, manager, time series),
    the spec's inputs first in the spec's order, then the template's other inputs of that
    component, then inputs of no known component ("Other").
    """
    known = meanings_by_name(naming)
    if template_specs is None:
        return tuple(FormField(m.name(naming), m.default_spec(naming), m, m.component, False) for m in TOOLKIT_INPUTS)
    spec_order = {m.name(naming): index for index, m in enumerate(TOOLKIT_INPUTS)}
    fields: list[FormField] = []
    for spec in template_specs:
        meaning = known.get(spec.name)
        component = meaning.component if meaning else _component_of(spec.name, naming)
        fields.append(FormField(spec.name, spec, meaning, component, True))
    components = list(Component)

    def order(item: tuple[int, FormField]) -> tuple[int, int, int]:
        index, f = item
        group = components.index(f.component) if f.component else len(components)
        return (group, spec_order.get(f.name, len(spec_order)), index)

    return tuple(f for _, f in sorted(enumerate(fields), key=order))


def missing_from_template(naming: NamingProfile, template_specs: Sequence[InputSpec]) -> tuple[str, ...]:
    """Spec inputs the template does not declare (the template may be of another release)."""
    declared = {spec.name for spec in template_specs}
    return tuple(m.name(naming) for m in TOOLKIT_INPUTS if m.name(naming) not in declared)


@dataclass(frozen=True)
class Problem:
    name: str
    severity: Severity
    message: str


def check_field(field: FormField, values: Mapping[str, str], naming: NamingProfile) -> tuple[Problem, ...]:
    """Problems of one field, given every value of the form (some checks look at others)."""
    value = values.get(field.name, "")
    error = _field_error(field, value, values, naming)
    problems = [Problem(field.name, Severity.ERROR, error)] if error else []
    warning = _field_warning(field, value, values, naming)
    if warning:
        problems.append(Problem(field.name, Severity.WARNING, warning))
    return tuple(problems)


def validate_inputs(fields: Sequence[FormField], values: Mapping[str, str], naming: NamingProfile) -> tuple[Problem, ...]:
    """Problems of every field, in form order."""
    return tuple(problem for field in fields for problem in check_field(field, values, naming))


def errors_only(problems: Iterable[Problem]) -> tuple[Problem, ...]:
    return tuple(p for p in problems if p.severity is Severity.ERROR)


def _field_error(field: FormField, value: str, values: Mapping[str, str], naming: NamingProfile) -> str | None:
    required = checks.check_required(value, field.mandatory)
    if required:
        return required
    if not value:
        # optional and empty: only the TLS pair relates an empty value to another one
        return _tls_error(field, values, naming) if field.check in (Check.TLS_CERT, Check.TLS_KEY) else None
    rule = component_rule(field)
    return (
        checks.check_type(field.spec, value)
        or field.spec.length_rule.check(value)
        or _meaning_error(field, value, values, naming)
        or (rule.check(value) if rule is not None else None)
    )


def _meaning_error(field: FormField, value: str, values: Mapping[str, str], naming: NamingProfile) -> str | None:
    check = field.check
    if check is Check.SINGLE_LINE:
        return checks.check_single_line(value)
    if check is Check.HOST_NAMES:
        return checks.check_host_names(value)
    if check in (Check.TLS_CERT, Check.TLS_KEY):
        return _tls_error(field, values, naming)
    if check is Check.RPC_ENDPOINT:
        return checks.check_rpc_endpoint(value)
    if check is Check.FLOW_ENDPOINT:
        return checks.check_flow_endpoint(value)
    if check is Check.INSECURE:
        rpc, flow = _endpoints(values, naming)
        return checks.check_insecure(value, rpc, flow)
    if check is Check.BRANCH:
        return checks.check_branch_name(value)
    if check is Check.DIRECTORY:
        return checks.check_directory_name(value)
    return None


def _tls_error(field: FormField, values: Mapping[str, str], naming: NamingProfile) -> str | None:
    cert = values.get(input_name(naming, Component.OBJECTSTORE, "tls_cert"), "")
    key = values.get(input_name(naming, Component.OBJECTSTORE, "tls_key"), "")
    cert_problem, key_problem = checks.check_tls_pair(cert, key)
    return cert_problem if field.check is Check.TLS_CERT else key_problem


def _endpoints(values: Mapping[str, str], naming: NamingProfile) -> tuple[str, str]:
    return (
        values.get(input_name(naming, Component.AUTOMATION, "cloud_endpoint"), ""),
        values.get(input_name(naming, Component.AUTOMATION, "cloud_flow_endpoint"), ""),
    )


def _field_warning(field: FormField, value: str, values: Mapping[str, str], naming: NamingProfile) -> str | None:
    if field.check is Check.INSECURE:
        return checks.tls_endpoint_warning(*_endpoints(values, naming))
    if field.check is Check.DIRECTORY and value:
        branch = values.get(input_name(naming, Component.MANAGER, "sites_branch"), "")
        if branch and branch != value:
            return f"usually the same as the branch name ({branch})"
    if field.spec.problem:
        return f"the template's description of this input is unreadable: {field.spec.problem}"
    return None


def prefill(
    fields: Sequence[FormField],
    naming: NamingProfile,
    *,
    rpc_endpoint: str = "",
    flow_endpoint: str = "",
    cloud_username: str = "",
) -> dict[str, str]:
    """Starting values: the template's defaults, then what the console knows (its endpoints, user)."""
    values = {f.name: f.default for f in fields}
    known = {
        input_name(naming, Component.AUTOMATION, "cloud_endpoint"): rpc_endpoint,
        input_name(naming, Component.AUTOMATION, "cloud_flow_endpoint"): flow_endpoint,
        input_name(naming, Component.AUTOMATION, "cloud_username"): cloud_username,
    }
    for name, value in known.items():
        if name in values and value and not values[name]:
            values[name] = value
    insecure = input_name(naming, Component.AUTOMATION, "cloud_insecure")
    if insecure in values and not values[insecure]:
        tls = checks.uses_tls(rpc_endpoint) and checks.uses_tls(flow_endpoint)
        values[insecure] = checks.NO if tls else checks.YES
    return values
