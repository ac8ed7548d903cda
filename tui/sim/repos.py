"""The embedded site's git repositories: the sites repository and the component library.

`seed_repositories` builds two bare repositories in the site's state directory with the real git
command, the way a real site's hosting would hold them:
- `sites.git`: default branch `main` with a README and the hidden template directory
  (`.dummy/core.yaml`, a commented template with every field of a real one), plus one existing
  site branch whose `core.yaml` is vault-encrypted with the demo vault password;
- `library.git`: the spec's minimal components, each with
  `<component>/<naming.component_manager_dir>/public.yaml` (metadata, site variables, inputs);
  appliances are marketplace record URLs with the `{marketplace_url}` placeholder and the record
  ids of the embedded marketplace's catalogue.
Seeding is idempotent: existing repositories are left as they are. Building them takes a few
git commands, so each distinct set of contents is built once per process and copied for every
further site (tests start many sites). `seed_site_repositories(site)` is what scenario seeding
calls: it also writes the demo vault password file (mode 0600) beside them. With
`background=True` (the demo console: its first frame needs no repository) the paths are recorded
at once and the repositories built in a thread (`site.repositories_build`); `site.repositories_ready`
is set when they can be used (or building failed: `site.repositories_error`). With `on_request`
too, that thread starts only at `request_repositories(site)`: the demo asks once its first frame
is painted, so building (and importing ansible's vault, ~0.2 s of CPU) does not slow the site's
first answers.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from tui.domain.naming import DEFAULT_NAMING, NamingProfile

if TYPE_CHECKING:  # pragma: no cover
    from tui.sim.state import SimSite

SITES_REPO = "sites.git"
LIBRARY_REPO = "library.git"
DEFAULT_BRANCH = "main"
TEMPLATE_DIR = ".dummy"
#: the demo's existing site (branch and directory named alike, as usual)
EXISTING_SITE = "demo-site"
#: the demo's vault password (the site secret app_automation_sites_token of the demo site)
SIM_VAULT_PASSWORD = "demo-sites-token"
#: the file in the state directory holding the demo vault password (mode 0600)
VAULT_PASSWORD_FILE = "vault-password"

#: the demo site's administrators' key (a well-formed ed25519 public key nobody holds the private half of)
DEMO_ADMIN_KEY = "AAAAC3NzaC1lZDI1NTE5AAAAIJFWDup4R2o+6kIe8hQAzUxI3SDvSF9CiqeWurrxsmg5 admins@demo-site"

_IDENTITY = ("-c", "user.name=Site Repository Seeder", "-c", "user.email=seeder@sim.invalid")


def template_core_yaml(naming: NamingProfile = DEFAULT_NAMING) -> str:
    """The commented template a new site starts from."""
    key = naming.site_variables_key
    automation_user = naming.input_name("automation_cloud_username")
    return f"""# Site configuration of one experimentation site (core.yaml).
#
# Copy of the template kept in the hidden directory of the default branch. A new site branches
# from the default branch, renames that directory after app_manager_deployment_site and fills
# the values below. The file is vault-encrypted before it is committed:
#   ansible-vault encrypt --vault-password-file <file> core.yaml
# and changed later with `ansible-vault edit`.

# Public address forwarding to the site (ports xx211-xx240 reach .211-.240 of the default network).
site_public_ip: "12.34.56.78"
# DNS domain of the site's trial networks.
site_domain: "trial.mysite.internal"
# Name servers given to trial networks, comma separated.
site_dns: "8.8.8.8,1.1.1.1"
# Virtualisation platform of the site.
site_hypervisor: "one"
# The platform's gate endpoint address (ONEGATE_ENDPOINT of the platform configuration).
site_onegate: "10.11.32.103"

# Cluster IDs where trial networks are deployed.
site_clusters: [0]
# Virtual networks: the default (OAM) network of the site.
site_networks_id:
  default: 0  # the site's default network ID

# Trial-network VXLAN: the bridge it rides on and its MTUs.
site_vxlan_if: "br-mgmt"
site_vxlan_mtu: 1500
# Must stay below site_vxlan_mtu: VXLAN adds 50-54 bytes of headers.
site_vxlan_guest_mtu: 1450

# Public key installed in every trial-network VM for the site administrators.
site_admin_ssh_public_key: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeTemplateKeyReplaceMe admin@site"

# Components offered by the site. Every component must be listed here; those with site
# variables carry the IDs of their templates and images (see each component's public.yaml).
# The cloud user named in {automation_user} needs permissions on them.
{key}:
  tn_init: null      # optional: tn_vxlan and tn_bastion in one pipeline
  tn_vxlan: null     # required: only listed
  vnet: null         # like tn_vxlan
  tn_bastion:        # mandatory: entry point of every trial network
    template_id: 0
    image_id: 0
  vm_kvm:            # highly recommended: checks that the site works
    template_id: 0
    image_id: 0

# Object store of the toolkit. The endpoint is the object store VM's address, known once the
# toolkit is deployed, which is why this file is submitted last.
site_s3_server:
  endpoint: "https://<objectstore ip>:9000"
  bucket: "trial-networks"
  region: "main"
  insecure: true
"""


def _site_core_yaml(naming: NamingProfile) -> str:
    """The existing demo site's configuration: the template partly filled in (public address, domain,
    object store, admin key); the gate address and the appliance IDs are still the template's."""
    key = naming.site_variables_key
    text = template_core_yaml(naming)
    text = text.replace('site_public_ip: "12.34.56.78"', 'site_public_ip: "192.0.2.10"')
    text = text.replace('site_domain: "trial.mysite.internal"', 'site_domain: "trial.demo.internal"')
    text = text.replace('"https://<objectstore ip>:9000"', '"https://10.0.0.21:9000"')
    text = text.replace("AAAAC3NzaC1lZDI1NTE5AAAAIFakeTemplateKeyReplaceMe admin@site", DEMO_ADMIN_KEY)
    return text.replace(f"{key}:\n", f"{key}:\n  # filled by the site's operators\n", 1)


def _readme() -> str:
    return """# Sites repository

One branch per experimentation site. Each site branch holds a directory named after the site
(`app_manager_deployment_site`) with its vault-encrypted `core.yaml`.

To add a site: branch from `main`, rename the hidden template directory `.dummy` after the
site, fill `core.yaml`, encrypt it (`ansible-vault encrypt --vault-password-file FILE core.yaml`),
commit and push the branch.
"""


def _components(naming: NamingProfile) -> dict[str, str]:
    """public.yaml text of each component of the spec's minimal set."""
    market = "{marketplace_url}/appliance"
    image_vars = """site_variables:
  template_id: "ID of the VM template of the {what} appliance"
  image_id: "ID of the image of the {what} appliance"
"""
    return {
        "tn_bastion": f"""metadata:
  maintainers:
    - "Site operations team <ops@example.org>"
  short_description: "Entry point of every trial network."
  long_description: |
    A VM on the site's default network and on the trial network, running the VPN and the
    jump host through which every trial network is reached. Mandatory.
  hypervisors: ["one"]
  appliances:
    - "{market}/service_bastion"
{image_vars.format(what="bastion")}input:
  bastion_cpu:
    description: "Virtual CPUs of the bastion"
    type: "int"
    default_value: 2
  bastion_wireguard_allowed_networks:
    description: "Networks reachable through the VPN"
    type: "str"
    default_value: ""
terraform_outputs:
  id: "VM id"
""",
        "tn_vxlan": """metadata:
  maintainers:
    - "Site operations team <ops@example.org>"
  short_description: "The trial network's private VXLAN network."
  long_description: |
    Creates the private network of a trial network over the site's VXLAN bridge. No
    installation: it only has to be listed in the site configuration.
  hypervisors: ["one"]
input:
  vxlan_first_ip:
    description: "First address of the network"
    type: "str"
    default_value: "10.10.10.1"
""",
        "tn_init": """metadata:
  maintainers:
    - "Site operations team <ops@example.org>"
  short_description: "tn_vxlan and tn_bastion in one pipeline."
  long_description: |
    Optional wrapper deploying the trial network's VXLAN and its bastion through a single
    pipeline, so a deployment is shorter.
  hypervisors: ["one"]
""",
        "vnet": """metadata:
  maintainers:
    - "Site operations team <ops@example.org>"
  short_description: "An extra virtual network inside a trial network."
  long_description: |
    Treated like tn_vxlan: no installation, only listed in the site configuration.
  hypervisors: ["one"]
input:
  vnet_netmask:
    description: "Netmask length of the network"
    type: "int"
    default_value: 24
    choices: [16, 24, 28]
""",
        "vm_kvm": f"""metadata:
  maintainers:
    - "Site operations team <ops@example.org>"
  short_description: "A simple Ubuntu VM."
  long_description: |
    A plain Ubuntu VM, used to check that the site works. Highly recommended.
  hypervisors: ["one"]
  appliances:
    - "{market}/service_vm_kvm"
{image_vars.format(what="Ubuntu base VM")}input:
  vm_kvm_memory:
    description: "Memory of the VM in MiB"
    type: "int"
    default_value: 2048
""",
        "cluster": f"""metadata:
  maintainers:
    - "Site operations team <ops@example.org>"
  short_description: "A container cluster."
  long_description: |
    The container cluster other cluster-based components build on. One template per
    supported cluster version.
  hypervisors: ["one"]
  appliances:
    - "{market}/service_container_cluster"
site_variables:
  "129":
    template_id: "ID of the VM template of the cluster, version 1.29"
  "131":
    template_id: "ID of the VM template of the cluster, version 1.31"
input:
  cluster_version:
    description: "Cluster version"
    type: "str"
    default_value: "131"
    choices: ["129", "131"]
  cluster_nodes:
    description: "Worker nodes"
    type: "int"
    default_value: 1
""",
        "core_net_cluster": """metadata:
  maintainers:
    - "Site operations team <ops@example.org>"
  short_description: "Mobile core network on the container cluster."
  long_description: |
    Deploys the core network as workloads of the trial network's container cluster.
    No appliance: it runs on the cluster component.
  hypervisors: ["one"]
input:
  core_cluster:
    description: "The cluster component to deploy on"
    type: "str"
    required_when: "always"
""",
        "core_net_vm": f"""metadata:
  maintainers:
    - "Site operations team <ops@example.org>"
  short_description: "Mobile core network on one VM."
  long_description: |
    The whole core network in a single VM.
  hypervisors: ["one"]
  appliances:
    - "{market}/service_core_vm"
{image_vars.format(what="core network VM")}""",
        "ran_sim": f"""metadata:
  maintainers:
    - "Site operations team <ops@example.org>"
  short_description: "User equipment and radio access network simulator."
  long_description: |
    Simulates user equipment and the radio access network on a VM, attached to a core network.
  hypervisors: ["one"]
  appliances:
    - "{market}/service_ueransim"
{image_vars.format(what="UE/RAN simulator")}input:
  ran_core:
    description: "The core network component to attach to"
    type: "str"
    required_when: "always"
""",
    }


#: the component library's sample trial-network descriptor for tn_init (the public library keeps one
#: at this path: 6G-SANDBOX/6G-Library tn_init/sample_tnlcm_descriptor.yaml); what the manager's
#: test deployment sends (the existing installer's last step)
SAMPLE_DESCRIPTOR = "tn_init/sample_tnlcm_descriptor.yaml"
_SAMPLE_TN_INIT = """trial_network:
  tn_init:
    type: "tn_init"
    dependencies: []
    input:
      one_vxlan_first_ip: "192.168.199.1"   # first address of the trial network's VXLAN
      one_bastion_vpn_clients: 1
"""


def _library_readme(naming: NamingProfile) -> str:
    return f"""# Component library

Each top-level directory is a component. Its site variables, appliances and inputs are described
in `<component>/{naming.component_manager_dir}/public.yaml`.
"""


def _git(*args: str, cwd: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["LC_ALL"] = "C"
    subprocess.run(["git", *_IDENTITY, *args], cwd=cwd, env=env, check=True, stdin=subprocess.DEVNULL, capture_output=True)


def _encrypt(text: str, password: str) -> str:
    # imported here, not at module load: ansible's vault pulls in its config and templating
    # (~0.2 s), and the demo's start-up imports this module before its first frame
    from ansible.parsing.vault import VaultLib, VaultSecret

    return VaultLib([("default", VaultSecret(password.encode()))]).encrypt(text).decode("ascii")


def _write(root: Path, files: dict[str, str | None]) -> None:
    """Write each file; None removes the path (a file or a whole directory)."""
    for relative, text in files.items():
        path = root / relative
        if text is None:
            shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _build(bare: Path, commits: list[tuple[str, str | None, dict[str, str | None]]]) -> None:
    """Create `bare` from commits of (branch, parent branch or None, files), pushed in order."""
    scratch = Path(tempfile.mkdtemp(prefix=".seed-", dir=bare.parent))
    try:
        # no sample hooks (`--template=`): each site copies these repositories
        _git("init", "--quiet", "--template=", "--initial-branch", DEFAULT_BRANCH, str(scratch), cwd=bare.parent)
        for branch, parent, files in commits:
            if parent is not None:
                _git("checkout", "--quiet", "-b", branch, parent, cwd=scratch)
            _write(scratch, files)
            _git("add", "--all", cwd=scratch)
            _git("commit", "--quiet", "-m", f"{branch}: {', '.join(sorted(files))}", cwd=scratch)
        temp_bare = bare.with_name(bare.name + ".partial")
        shutil.rmtree(temp_bare, ignore_errors=True)
        _git("init", "--quiet", "--bare", "--template=", "--initial-branch", DEFAULT_BRANCH, str(temp_bare),
             cwd=bare.parent)
        _git("push", "--quiet", str(temp_bare), "--all", cwd=scratch)
        temp_bare.rename(bare)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


_CACHE_LOCK = threading.Lock()
_CACHE: dict[tuple[object, ...], Path] = {}
_CACHE_ROOT: list[Path] = []


def _cache_root() -> Path:
    if not _CACHE_ROOT:
        root = Path(tempfile.mkdtemp(prefix="sitetk-sim-repos-"))
        atexit.register(shutil.rmtree, str(root), True)
        _CACHE_ROOT.append(root)
    return _CACHE_ROOT[0]


def seed_repositories(
    state_dir: Path,
    naming: NamingProfile = DEFAULT_NAMING,
    *,
    vault_password: str = SIM_VAULT_PASSWORD,
    existing_site: str | None = EXISTING_SITE,
) -> tuple[Path, Path]:
    """Create (once) the bare sites repository and component library; return their paths."""
    state_dir.mkdir(parents=True, exist_ok=True)
    sites = state_dir / SITES_REPO
    library = state_dir / LIBRARY_REPO
    if sites.exists() and library.exists():
        return sites, library
    key = (naming, vault_password, existing_site)
    with _CACHE_LOCK:
        built = _CACHE.get(key)
        if built is None:
            built = Path(tempfile.mkdtemp(prefix="built-", dir=_cache_root()))
            _build_repositories(built, naming, vault_password=vault_password, existing_site=existing_site)
            _CACHE[key] = built
    for name, target in ((SITES_REPO, sites), (LIBRARY_REPO, library)):
        if not target.exists():
            partial = target.with_name(target.name + ".copy")
            shutil.rmtree(partial, ignore_errors=True)
            shutil.copytree(built / name, partial, symlinks=True)
            partial.rename(target)
    return sites, library


def write_vault_password_file(state_dir: Path, password: str = SIM_VAULT_PASSWORD) -> Path:
    """The demo's vault password file (mode 0600 from its creation), as an operator keeps one."""
    path = state_dir / VAULT_PASSWORD_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(password + "\n")
    os.chmod(path, 0o600)
    return path


def seed_site_repositories(site: "SimSite", *, background: bool = False,
                           on_request: bool = False) -> threading.Thread | None:
    """Seed the site's repositories and vault password file; record their paths on the site.
    With `background`, the repositories are built in the thread returned, started at once or, with
    `on_request`, by `request_repositories` (see the module docstring)."""
    site.vault_password_file = write_vault_password_file(site.state_dir)
    if not background:
        site.sites_repo, site.library_repo = seed_repositories(site.state_dir, site.naming)
        site.repositories_ready.set()
        return None
    site.sites_repo, site.library_repo = site.state_dir / SITES_REPO, site.state_dir / LIBRARY_REPO

    def build() -> None:
        try:
            seed_repositories(site.state_dir, site.naming)
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits for the repositories
            site.repositories_error = exc
        finally:
            site.repositories_ready.set()

    thread = threading.Thread(target=build, name="sitetk-sim-repos", daemon=True)
    site.repositories_build = thread
    if not on_request:
        thread.start()
    return thread


_REQUEST_LOCK = threading.Lock()


def request_repositories(site: "SimSite") -> None:
    """Start building the repositories of a site seeded with `on_request` (once: later calls, and
    sites whose build started at seeding or ran inline, change nothing)."""
    build = site.repositories_build
    if build is None:
        return
    with _REQUEST_LOCK:
        if build.ident is None:  # not started yet
            build.start()


def _build_repositories(
    state_dir: Path,
    naming: NamingProfile,
    *,
    vault_password: str,
    existing_site: str | None,
) -> None:
    sites = state_dir / SITES_REPO
    library = state_dir / LIBRARY_REPO
    if not sites.exists():
        commits: list[tuple[str, str | None, dict[str, str | None]]] = [
            (DEFAULT_BRANCH, None, {"README.md": _readme(), f"{TEMPLATE_DIR}/core.yaml": template_core_yaml(naming)}),
        ]
        if existing_site:
            site_files: dict[str, str | None] = {
                TEMPLATE_DIR: None,  # the template directory became the site's directory
                f"{existing_site}/core.yaml": _encrypt(_site_core_yaml(naming), vault_password),
            }
            commits.append((existing_site, DEFAULT_BRANCH, site_files))
        _build(sites, commits)
    if not library.exists():
        files: dict[str, str | None] = {"README.md": _library_readme(naming)}
        for component, text in _components(naming).items():
            files[f"{component}/{naming.component_manager_dir}/public.yaml"] = text
        files[SAMPLE_DESCRIPTOR] = _SAMPLE_TN_INIT
        _build(library, [(DEFAULT_BRANCH, None, files)])
