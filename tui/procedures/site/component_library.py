"""Reading the component library: every component's public.yaml from the library repository.

Each top-level non-hidden directory holding `<manager dir>/public.yaml` is a component; it is read
from the default branch of the remote (no checkout needed). A component whose public.yaml is
broken is reported as a problem and the others are still listed.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from tui.adapters.git_repo import GitRepo
from tui.domain.components import ComponentDefinitionError, ComponentLibrary, parse_public_yaml
from tui.domain.naming import DEFAULT_NAMING, NamingProfile
from tui.procedures.audit import REDACTOR
from tui.procedures.reading_pass import branches as pass_branches
from tui.procedures.reading_pass import synced
from tui.procedures.site.workspace import library_repo

if TYPE_CHECKING:  # pragma: no cover
    from tui.domain.components import ComponentDefinition
    from tui.procedures.connection import SiteConnection

PUBLIC_FILE = "public.yaml"


async def load_library(repo: GitRepo, naming: NamingProfile = DEFAULT_NAMING, ref: str | None = None) -> ComponentLibrary:
    """Clone or fetch the library, then parse each component's public.yaml at `ref` (default branch)."""
    if repo.remote.token:
        REDACTOR.register(repo.remote.token)
    await synced(repo)  # once per pass (tui.procedures.reading_pass)
    if ref is None:
        branches = await pass_branches(repo)
        ref, commit = f"origin/{branches.default}", branches.heads.get(branches.default)
    else:
        commit = await repo.commit_of(ref)
    key = (commit or "", naming.component_manager_dir)
    if commit is not None and key in _READ:
        return _READ[key]
    library = await _read_library(repo, naming, ref)
    if commit is not None:
        _READ[key] = library
        while len(_READ) > _KEPT:
            del _READ[next(iter(_READ))]
    return library


#: libraries read lately, by the commit read and the naming's manager directory: a commit names its
#: files' content, so the same commit is not read and parsed again (a setup pass reads the library
#: once for the whole check and once for each component it enables); a fetch that moved the branch
#: gives another commit, read anew
_READ: dict[tuple[str, str], ComponentLibrary] = {}
_KEPT = 8


async def _read_library(repo: GitRepo, naming: NamingProfile, ref: str) -> ComponentLibrary:
    """Every component's public.yaml at `ref`, parsed."""
    components: dict[str, str] = {}
    for path in await repo.list_files(ref):
        parts = PurePosixPath(path).parts
        if len(parts) == 3 and parts[1] == naming.component_manager_dir and parts[2] == PUBLIC_FILE and not parts[0].startswith("."):
            components[parts[0]] = path
    definitions = []
    problems = []
    for name in sorted(components):
        text = await repo.read_file(ref, components[name])
        try:
            definitions.append(parse_public_yaml(name, text or ""))
        except ComponentDefinitionError as error:
            problems.append(str(error))
    return ComponentLibrary(tuple(definitions), tuple(problems))


async def library_definitions(site: "SiteConnection") -> "dict[str, ComponentDefinition]":
    """The component library's definitions (SiteError when it is not configured or unreadable)."""
    await site.wait_for_repositories()
    repo = library_repo(site.settings)
    try:
        return dict((await load_library(repo, site.naming)).as_mapping())
    finally:
        repo.close()
