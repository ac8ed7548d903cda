"""Value checks for service inputs: each returns a message saying what is wrong, or None.

Messages are phrased to sit next to the field: they say what was expected, with an example.
These functions know nothing of input names; `toolkit_inputs` decides which check applies to
which input.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from urllib.parse import SplitResult, urlsplit

from tui.domain.input_specs import InputSpec, InputType

YES, NO = "YES", "NO"

_HOST = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?")
_RANGE = re.compile(r"\{([0-9]+)\.\.\.([0-9]+)\}")
_PEM_BLOCK = re.compile(
    r"-----BEGIN (?P<label>[A-Z0-9 ]+)-----(?P<body>.*?)-----END (?P<end>[A-Z0-9 ]+)-----", re.S
)
_KEY_LABELS = ("PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def check_required(value: str, mandatory: bool) -> str | None:
    if mandatory and not value.strip():
        return "required"
    return None


def _endpoint(value: str, shape: str, example: str) -> tuple[SplitResult | None, str | None]:
    text = value.strip()
    if not text:
        return None, f"expected {shape}, e.g. {example}"
    if text != value or any(ch.isspace() for ch in text):
        return None, f"remove the spaces: expected {shape}, e.g. {example}"
    try:
        parts = urlsplit(text)
    except ValueError:  # e.g. an unbalanced '[' (an IPv6 address)
        return None, f"is not a URL: expected {shape}, e.g. {example}"
    if parts.scheme.lower() not in ("http", "https"):
        return None, f"must start with http:// (or https://): expected {shape}, e.g. {example}"
    if "@" in parts.netloc:
        return None, "must not carry a user or password: credentials go in their own inputs"
    if not parts.hostname or not (_HOST.fullmatch(parts.hostname) or parts.netloc.startswith("[")):
        return None, f"names no valid host: expected {shape}, e.g. {example}"
    try:
        port = parts.port
    except ValueError:
        return None, f"the port must be a number from 1 to 65535: expected {shape}"
    if port is None:
        return None, f"names no port: expected {shape}, e.g. {example}"
    if port == 0:
        return None, "the port must be a number from 1 to 65535"
    if parts.query or parts.fragment or text.endswith(("?", "#")):
        return None, f"must not have a query or fragment: expected {shape}"
    return parts, None


def check_rpc_endpoint(value: str) -> str | None:
    """`http://<host>:<port>/RPC2`: the cloud's XML-RPC endpoint."""
    shape, example = "http://<host>:<port>/RPC2", "http://10.0.0.1:2633/RPC2"
    parts, problem = _endpoint(value, shape, example)
    if parts is None:
        return problem
    if parts.path != "/RPC2":
        return f"the path must be /RPC2: expected {shape}, e.g. {example}"
    return None


def check_flow_endpoint(value: str) -> str | None:
    """`http://<host>:<port>`: the multi-VM service endpoint, no path."""
    shape, example = "http://<host>:<port>", "http://10.0.0.1:2474"
    parts, problem = _endpoint(value, shape, example)
    if parts is None:
        return problem
    if parts.path not in ("", "/"):
        return f"must have no path: expected {shape}, e.g. {example}"
    return None


def uses_tls(endpoint: str) -> bool:
    return endpoint.strip().lower().startswith("https://")


def check_yes_no(value: str) -> str | None:
    if value not in (YES, NO):
        return f"must be {YES} or {NO}"
    return None


def check_insecure(value: str, rpc_endpoint: str, flow_endpoint: str) -> str | None:
    """YES unless both cloud endpoints are TLS-protected (https)."""
    problem = check_yes_no(value)
    if problem:
        return problem
    plain = [e for e in (rpc_endpoint, flow_endpoint) if e.strip() and not uses_tls(e)]
    if value != YES and plain:
        return f"must be {YES}: the cloud endpoints are not TLS-protected (http)"
    return None


def tls_endpoint_warning(rpc_endpoint: str, flow_endpoint: str) -> str | None:
    """A warning (not an error) when an endpoint uses https: the toolkit is untested with TLS."""
    if uses_tls(rpc_endpoint) or uses_tls(flow_endpoint):
        return "TLS-protected (https) cloud endpoints are untested with the toolkit"
    return None


def _pem_blocks(value: str) -> tuple[list[re.Match[str]], str | None]:
    text = value.strip()
    blocks = list(_PEM_BLOCK.finditer(text))
    if not blocks:
        return [], "is not PEM: expected -----BEGIN ...----- base64 lines -----END ...-----"
    leftover = _PEM_BLOCK.sub("", text).strip()
    if leftover:
        return [], "has text outside the -----BEGIN/END----- lines"
    for block in blocks:
        if block.group("label") != block.group("end"):
            return [], f"BEGIN {block.group('label')} is closed by END {block.group('end')}"
        body = block.group("body")
        if "Proc-Type:" in body and "ENCRYPTED" in body:
            return [], "is encrypted: the server has no passphrase, give an unencrypted key"
        compact = "".join(body.split())
        try:
            if not compact or not base64.b64decode(compact, validate=True):
                raise binascii.Error("empty")
        except (binascii.Error, ValueError):
            return [], f"the {block.group('label')} block is not valid base64"
    return blocks, None


def check_pem_certificate(value: str) -> str | None:
    """One or more PEM CERTIFICATE blocks (a chain), nothing else."""
    blocks, problem = _pem_blocks(value)
    if problem:
        return f"the certificate {problem}"
    labels = {b.group("label") for b in blocks}
    if labels & {*_KEY_LABELS, "ENCRYPTED PRIVATE KEY"}:
        return "this is a private key: it goes in the TLS key input"
    if labels != {"CERTIFICATE"}:
        return f"expected -----BEGIN CERTIFICATE-----, found {', '.join(sorted(labels))}"
    return None


def check_pem_private_key(value: str) -> str | None:
    """Exactly one unencrypted PEM private key (PKCS#8, RSA or EC)."""
    blocks, problem = _pem_blocks(value)
    if problem:
        return f"the key {problem}"
    labels = [b.group("label") for b in blocks]
    if labels == ["ENCRYPTED PRIVATE KEY"]:
        return "the key is encrypted: the server has no passphrase, give an unencrypted key"
    if "CERTIFICATE" in labels:
        return "this is a certificate: it goes in the TLS certificate input"
    if len(labels) != 1 or labels[0] not in _KEY_LABELS:
        return f"expected one -----BEGIN PRIVATE KEY----- block, found {', '.join(labels)}"
    return None


def check_tls_pair(cert: str, key: str) -> tuple[str | None, str | None]:
    """Both empty (no TLS) or both present and PEM-shaped: (certificate problem, key problem)."""
    has_cert, has_key = bool(cert.strip()), bool(key.strip())
    if not has_cert and not has_key:
        return None, None
    if not has_cert:
        return "a TLS key needs its certificate: fill both, or leave both empty for no TLS", None
    if not has_key:
        return None, "a TLS certificate needs its key: fill both, or leave both empty for no TLS"
    return check_pem_certificate(cert), check_pem_private_key(key)


def check_host_names(value: str) -> str | None:
    """Comma-separated host names, patterns and addresses, as the object store takes them.

    The toolkit hands this input to the object store appliance, which passes it to MinIO's
    `certgen -host` to write its TLS certificate (OpenNebula/one-apps appliances/service_MinIO,
    `generate_tls_certs`; its default and the toolkit template's own example is
    `localhost,minio-*.example.net`). certgen splits on commas and puts each entry in the
    certificate as an IP address or a DNS name, so: host names (`s3.site.org`, `localhost`), a `*`
    wildcard in the first label of a longer name (`*.site.org`, `minio-*.example.net`), IPv4 and
    IPv6 addresses. A MinIO `{1...4}` range is the server's volume syntax: certgen does not expand
    it, so it is refused with the names to write instead.
    """
    if not value.strip():
        return "expected one or more host names separated by commas, e.g. localhost,minio-*.example.net"
    for position, item in enumerate(value.split(","), start=1):
        name = item.strip()
        if not name:
            return f"entry {position} is empty: separate names with single commas"
        problem = _host_name_problem(name)
        if problem:
            return f"{name!r}: {problem}"
    return None


def _host_name_problem(name: str) -> str | None:
    if any(ch.isspace() for ch in name):
        return "a host name has no spaces"
    if "://" in name or "/" in name:
        return "give the host name only, without scheme or path"
    if _is_ip(name):
        return None
    if ":" in name:
        return "give the host name only, without a port"
    if len(name) > 253:
        return "longer than 253 characters"
    if _RANGE.search(name) or "{" in name or "}" in name:
        return ("the object store's certificate tool does not expand {1...4} ranges: list the names "
                "(minio-1.lan,minio-2.lan) or use a wildcard (minio-*.lan)")
    labels = name.rstrip(".").split(".")
    for index, label in enumerate(labels):
        if "*" in label:
            if index != 0 or len(labels) < 2:
                return "a '*' wildcard goes only in the first label of a longer name, as in *.site.org or minio-*.site.org"
            if label.count("*") > 1:
                return "one '*' per name, in its first label"
            # the rest of the label around the '*' follows the label rules ('-' may touch the '*')
            rest = label.replace("*", "").strip("-")
            problem = _label_problem(rest) if rest else None
            if problem:
                return problem
            continue
        if not label:
            return "has an empty label (two dots in a row)"
        problem = _label_problem(label)
        if problem:
            return problem
    return None


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return False
    return True


def _label_problem(label: str) -> str | None:
    bad = next((ch for ch in label if not (ch.isascii() and (ch.isalnum() or ch == "-"))), None)
    if bad is not None:
        return f"{bad!r} is not allowed (letters, digits and '-', a '*' in the first label)"
    if label.startswith("-") or label.endswith("-"):
        return f"label {label!r} starts or ends with '-'"
    if len(label) > 63:
        return f"label {label[:20]}... is longer than 63 characters"
    return None


def check_type(spec: InputSpec, value: str) -> str | None:
    """The value fits the input's declared type (an empty value is left to `check_required`)."""
    if value == "":
        return None
    kind = spec.type
    if kind is InputType.BOOLEAN:
        return check_yes_no(value)
    if kind is InputType.NUMBER and not _INTEGER.fullmatch(value):
        return "must be a whole number"
    if kind is InputType.NUMBER_FLOAT and not _FLOAT.fullmatch(value):
        return "must be a number"
    if kind in (InputType.RANGE, InputType.RANGE_FLOAT):
        pattern = _INTEGER if kind is InputType.RANGE else _FLOAT
        if not pattern.fullmatch(value):
            return "must be a whole number" if kind is InputType.RANGE else "must be a number"
        bounds = spec.bounds
        if bounds and not bounds[0] <= float(value) <= bounds[1]:
            return f"must be between {spec.params.replace('..', ' and ')}"
    if kind is InputType.LIST and value not in spec.options:
        return f"must be one of {', '.join(spec.options)}"
    if kind is InputType.LIST_MULTIPLE:
        chosen = [v.strip() for v in value.split(",")]
        wrong = [v for v in chosen if v not in spec.options]
        if wrong:
            return f"{wrong[0]!r} is not one of {', '.join(spec.options)}"
    return None


def check_branch_name(value: str) -> str | None:
    """A git branch name (the main rules of `git check-ref-format --branch`)."""
    if not value:
        return None
    bad = set(" ~^:?*[\\") | {chr(c) for c in range(32)} | {"\x7f"}
    if any(ch in bad for ch in value):
        return "a branch name has no spaces or any of ~ ^ : ? * [ \\"
    if value.startswith(("-", "/")) or value.endswith(("/", ".", ".lock")):
        return "a branch name does not start with '-' or '/' nor end with '/', '.' or '.lock'"
    if ".." in value or "//" in value or "@{" in value or value == "@":
        return "a branch name has no '..', '//' or '@{'"
    if any(part.startswith(".") for part in value.split("/")):
        return "no part of a branch name starts with '.'"
    return None


def check_directory_name(value: str) -> str | None:
    """One directory name (no path)."""
    if not value:
        return None
    if "/" in value or "\\" in value:
        return "one directory name, without '/'"
    if value in (".", ".."):
        return "must name a directory, not '.' or '..'"
    if value != value.strip() or "\x00" in value:
        return "remove the surrounding spaces"
    return None


def check_single_line(value: str) -> str | None:
    if "\n" in value or "\r" in value:
        return "must be one line"
    return None
