"""Every input check, with good and bad values."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tui.domain import input_checks as c
from tui.domain.input_specs import parse_input_description

from .builders import CERT, ENCRYPTED_KEY, KEY, LEGACY_ENCRYPTED_KEY


@pytest.mark.parametrize(
    "value",
    ["http://10.0.0.1:2633/RPC2", "http://frontend.site.org:2633/RPC2", "https://one.site.org:443/RPC2", "http://[::1]:2633/RPC2"],
)
def test_rpc_endpoint_good(value: str) -> None:
    assert c.check_rpc_endpoint(value) is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "expected http://<host>:<port>/RPC2"),
        ("10.0.0.1:2633/RPC2", "must start with http://"),
        ("ftp://10.0.0.1:2633/RPC2", "must start with http://"),
        ("http://10.0.0.1/RPC2", "names no port"),
        ("http://10.0.0.1:2633", "the path must be /RPC2"),
        ("http://10.0.0.1:2633/rpc2", "the path must be /RPC2"),
        ("http://10.0.0.1:2633/RPC2/", "the path must be /RPC2"),
        ("http://10.0.0.1:99999/RPC2", "from 1 to 65535"),
        ("http://10.0.0.1:0/RPC2", "from 1 to 65535"),
        ("http://10.0.0.1:port/RPC2", "from 1 to 65535"),
        ("http://:2633/RPC2", "names no valid host"),
        ("http://bad_host:2633/RPC2", "names no valid host"),
        ("http://user:pw@10.0.0.1:2633/RPC2", "must not carry a user or password"),
        ("http://10.0.0.1:2633/RPC2?x=1", "query or fragment"),
        (" http://10.0.0.1:2633/RPC2", "remove the spaces"),
    ],
)
def test_rpc_endpoint_bad(value: str, message: str) -> None:
    problem = c.check_rpc_endpoint(value)
    assert problem is not None and message in problem


@pytest.mark.parametrize("value", ["http://10.0.0.1:2474", "http://10.0.0.1:2474/", "https://flow.site.org:8443"])
def test_flow_endpoint_good(value: str) -> None:
    assert c.check_flow_endpoint(value) is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("http://10.0.0.1", "names no port"),
        ("http://10.0.0.1:2474/RPC2", "must have no path"),
        ("10.0.0.1:2474", "must start with http://"),
        ("http://10.0.0.1:2474#x", "query or fragment"),
        ("", "expected http://<host>:<port>"),
    ],
)
def test_flow_endpoint_bad(value: str, message: str) -> None:
    problem = c.check_flow_endpoint(value)
    assert problem is not None and message in problem


def test_insecure_flag() -> None:
    http_rpc, http_flow = "http://h:2633/RPC2", "http://h:2474"
    tls_rpc, tls_flow = "https://h:2633/RPC2", "https://h:2474"
    assert c.check_insecure("YES", http_rpc, http_flow) is None
    assert "must be YES" in (c.check_insecure("NO", http_rpc, http_flow) or "")
    assert "must be YES" in (c.check_insecure("NO", tls_rpc, http_flow) or "")  # one plain endpoint is enough
    assert c.check_insecure("NO", tls_rpc, tls_flow) is None
    assert c.check_insecure("YES", tls_rpc, tls_flow) is None
    assert c.check_insecure("yes", http_rpc, http_flow) == "must be YES or NO"
    assert c.check_insecure("", http_rpc, http_flow) == "must be YES or NO"
    assert c.check_insecure("NO", "", "") is None  # nothing known about the endpoints yet


def test_tls_warning_is_separate_from_errors() -> None:
    assert c.tls_endpoint_warning("http://h:2633/RPC2", "http://h:2474") is None
    warning = c.tls_endpoint_warning("https://h:2633/RPC2", "http://h:2474")
    assert warning is not None and "untested" in warning


def test_tls_pair_good() -> None:
    assert c.check_tls_pair("", "") == (None, None)
    assert c.check_tls_pair("  \n", "") == (None, None)
    assert c.check_tls_pair(CERT, KEY) == (None, None)
    assert c.check_tls_pair(CERT + CERT, KEY) == (None, None)  # a chain
    # whitespace inside the base64 body is fine, as when pasted on one line
    one_line = CERT.replace("\n", " ")
    assert c.check_pem_certificate(one_line) is None
    rsa_key = KEY.replace("BEGIN PRIVATE KEY", "BEGIN RSA PRIVATE KEY").replace("END PRIVATE KEY", "END RSA PRIVATE KEY")
    assert c.check_pem_private_key(rsa_key) is None


@pytest.mark.parametrize(
    ("cert", "key", "cert_msg", "key_msg"),
    [
        ("", KEY, "a TLS key needs its certificate", None),
        (CERT, "", None, "a TLS certificate needs its key"),
        ("hello", KEY, "is not PEM", None),
        (KEY, KEY, "this is a private key", None),
        (CERT, CERT, None, "this is a certificate"),
        (CERT, ENCRYPTED_KEY, None, "encrypted"),
        (CERT, LEGACY_ENCRYPTED_KEY, None, "encrypted"),
        (CERT, KEY + KEY, None, "expected one"),
        ("junk\n" + CERT, KEY, "text outside", None),
        (CERT.replace("END CERTIFICATE", "END CERTIFICATX"), KEY, "closed by END", None),
        ("-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n", KEY, "not valid base64", None),
        ("-----BEGIN CERTIFICATE-----\n\n-----END CERTIFICATE-----\n", KEY, "not valid base64", None),
        ("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", KEY, "found PUBLIC KEY", None),
    ],
)
def test_tls_pair_bad(cert: str, key: str, cert_msg: str | None, key_msg: str | None) -> None:
    cert_problem, key_problem = c.check_tls_pair(cert, key)
    if cert_msg is None:
        assert cert_problem is None
    else:
        assert cert_problem is not None and cert_msg in cert_problem
    if key_msg is None:
        assert key_problem is None
    else:
        assert key_problem is not None and key_msg in key_problem


@pytest.mark.parametrize(
    "value",
    ["s3.site.org", "s3.site.org,console.site.org", "*.site.org", "localhost,minio-*.example.net",
     "minio-*.site.org, 10.0.0.5", "localhost", "s3.site.org.", "*-s3.site.org", "::1,127.0.0.1"],
)
def test_host_names_good(value: str) -> None:
    assert c.check_host_names(value) is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "one or more host names"),
        ("a.org,,b.org", "entry 2 is empty"),
        ("a.org,", "entry 2 is empty"),
        ("my host.org", "no spaces"),
        ("http://s3.site.org", "without scheme"),
        ("s3.site.org:9000", "without a port"),
        ("site.*.org", "'*' wildcard"),
        ("*", "'*' wildcard"),
        ("a..org", "empty label"),
        ("bad_name.org", "'_' is not allowed"),
        ("-a.org", "starts or ends with '-'"),
        ("minio-{1...4}.lan", "does not expand"),
        ("minio-{1..4}.lan", "does not expand"),
        ("site.minio-*.org", "'*' wildcard"),
        ("m*n*o.site.org", "one '*' per name"),
        ("min_*.site.org", "'_' is not allowed"),
        ("a" * 64 + ".org", "longer than 63"),
        (("a" * 60 + ".") * 5 + "org", "longer than 253"),
    ],
)
def test_host_names_bad(value: str, message: str) -> None:
    problem = c.check_host_names(value)
    assert problem is not None and message in problem


def test_required() -> None:
    assert c.check_required("", True) == "required"
    assert c.check_required("  ", True) == "required"
    assert c.check_required("", False) is None
    assert c.check_required("x", True) is None


@pytest.mark.parametrize(
    ("description", "good", "bad", "message"),
    [
        ("M|boolean|B", ["YES", "NO"], ["yes", "true", "1"], "must be YES or NO"),
        ("M|number|N", ["0", "-3", "+42"], ["1.5", "x", "1e3"], "whole number"),
        ("M|number-float|F", ["1.5", "-2", ".5", "1e3"], ["x", "1,5"], "must be a number"),
        ("M|range|R|1..5", ["1", "5", "3"], ["0", "6"], "between 1 and 5"),
        ("M|range|R|1..5", [], ["2.5", "x"], "whole number"),
        ("M|range-float|R|0.5..1.5", ["0.5", "1", "1.5"], ["1.6", "x"], ""),
        ("M|list|L|a,b,c", ["a", "c"], ["d", "A", "a,b"], "must be one of a, b, c"),
        ("M|list-multiple|L|a,b,c", ["a", "a,c", "b, c"], ["a,d"], "'d' is not one of"),
        ("M|text|T", ["anything", "1"], [], ""),
        ("M|text64|T", ["anything"], [], ""),
        ("M|password|P", ["anything"], [], ""),
    ],
)
def test_types(description: str, good: list[str], bad: list[str], message: str) -> None:
    spec = parse_input_description("X", description)
    assert c.check_type(spec, "") is None  # empty is check_required's business
    for value in good:
        assert c.check_type(spec, value) is None, value
    for value in bad:
        problem = c.check_type(spec, value)
        assert problem is not None and message in problem, value


@pytest.mark.parametrize("value", ["main", "site/uma", "feature-1.2", ""])
def test_branch_good(value: str) -> None:
    assert c.check_branch_name(value) is None


@pytest.mark.parametrize("value", ["my branch", "a..b", "-x", "x/", "x.lock", "a//b", "a@{b", "@", "x~1", ".hidden", "a/.b", "x."])
def test_branch_bad(value: str) -> None:
    assert c.check_branch_name(value) is not None


@pytest.mark.parametrize(("value", "ok"), [("uma", True), ("", True), ("a/b", False), ("..", False), (".", False), (" uma", False), ("a\\b", False)])
def test_directory_name(value: str, ok: bool) -> None:
    assert (c.check_directory_name(value) is None) is ok


def test_single_line() -> None:
    assert c.check_single_line("a b") is None
    assert c.check_single_line("a\nb") == "must be one line"
    assert c.check_single_line("a\rb") == "must be one line"


text = st.text(st.characters(codec="utf-8"), max_size=60)
url_like = st.builds(lambda a, b: f"http://{a}:{b}", st.text("[]:.@/?#%0123456789abcdef-", max_size=20), text)


@given(st.one_of(text, url_like))
def test_property_checks_never_raise(value: str) -> None:
    for check in (
        c.check_rpc_endpoint, c.check_flow_endpoint, c.check_host_names, c.check_pem_certificate,
        c.check_pem_private_key, c.check_branch_name, c.check_directory_name, c.check_single_line, c.check_yes_no,
    ):
        result = check(value)
        assert result is None or (isinstance(result, str) and result)
    c.check_tls_pair(value, value)
    c.check_insecure(value, value, value)


def test_unbalanced_ipv6_bracket() -> None:
    assert "is not a URL" in (c.check_rpc_endpoint("http://[::1:2633/RPC2") or "")
