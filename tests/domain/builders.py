"""Small builders of domain records for the domain tests (plain constructors, no I/O)."""

from __future__ import annotations

import datetime

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

from tui.domain.appliances import ApplianceRecord, parse_record
from tui.domain.attribute_file import attributes_for
from tui.domain.attributes import Attributes
from tui.domain.hosts import Host, host_state_names
from tui.domain.images import ImageInfo, image_state_names
from tui.domain.naming import DEFAULT_NAMING, NamingProfile
from tui.domain.permissions import Permissions

MARKET = "http://127.0.0.1:8089"


def record(
    name: str = "Site Toolkit",
    version: str = "v0.5.0-20250403-1109",
    record_id: str = "service_toolkit",
    **fields: object,
) -> ApplianceRecord:
    data: dict[str, object] = {
        "_id": {"$oid": record_id},
        "links": {"download": {"href": f"{MARKET}/appliance/{record_id}/download"}},
        "name": name,
        "version": version,
        "publisher": "Site team",
        **fields,
    }
    return parse_record(data, MARKET)


def image(
    image_id: int,
    name: str,
    attrs: tuple[tuple[str, str], ...] = (),
    *,
    state: int = 1,
    running_vms: int = 0,
) -> ImageInfo:
    long_name, short = image_state_names(state)
    return ImageInfo(
        id=image_id, name=name, uid=0, gid=0, uname="oneadmin", gname="oneadmin", state=state,
        status=long_name, state_name=short, type=0, persistent=False, datastore_id=1,
        datastore="default", size_mb=1024, format="qcow2", source="", path="", regtime=0,
        running_vms=running_vms, vm_ids=(), permissions=Permissions(owner_u=1, owner_m=1),
        attributes=Attributes(tuple(attrs)),
    )


def tagged_image(
    image_id: int, rec: ApplianceRecord, name: str | None = None, naming: NamingProfile = DEFAULT_NAMING, **kw: object
) -> ImageInfo:
    attrs = (("DEV_PREFIX", "vd"),) + attributes_for(rec, naming)
    return image(image_id, name or f"{rec.name} {image_id}", attrs, **kw)  # type: ignore[arg-type]


def host(
    host_id: int,
    *,
    name: str | None = None,
    state: int = 2,
    arch: str = "x86_64",
    model: str = "Broadwell-noTSX",
    features: tuple[str, ...] | None = ("sse4_2", "avx", "avx2"),
    max_cpu: int = 800,
    used_cpu: int = 0,
    max_mem_kb: int = 16 * 1024 * 1024,
    used_mem_kb: int = 0,
) -> Host:
    return Host(
        id=host_id, name=name or f"host{host_id}", state=state, state_name=host_state_names(state)[0],
        im_mad="kvm", vm_mad="kvm", cluster_id=0, cluster="default", arch=arch, model_name="Intel Xeon",
        kvm_cpu_model=model, kvm_cpu_models=(model, "qemu64"), kvm_cpu_features=features, hypervisor="kvm",
        total_cpu=max_cpu, used_cpu=used_cpu, max_cpu=max_cpu, total_mem_kb=max_mem_kb,
        used_mem_kb=used_mem_kb, max_mem_kb=max_mem_kb, running_vms=0, vm_ids=(),
    )


def _pem_pair() -> tuple[str, str, str, str]:
    """A self-signed certificate, its key (PKCS#8), and the key encrypted (PKCS#8 and legacy RSA)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "s3.site.org")])
    now = datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=365))
        .sign(key, hashes.SHA256())
    )
    cert_pem = cert.public_bytes(serialization.Encoding.PEM).decode()
    pkcs8 = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    encrypted = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.BestAvailableEncryption(b"pw")
    ).decode()
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    legacy_encrypted = rsa_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.BestAvailableEncryption(b"pw"),
    ).decode()
    return cert_pem, pkcs8, encrypted, legacy_encrypted


CERT, KEY, ENCRYPTED_KEY, LEGACY_ENCRYPTED_KEY = _pem_pair()
