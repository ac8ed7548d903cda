"""The options the `sitetk site` verbs share, and the environment variables they name: light (no
procedures), so that registering the noun (`sitetk site --help`) imports none of the verbs'
dependencies; `site_options` reads them when a verb runs.
"""

from __future__ import annotations

import argparse

PASSWORD_FILE_ENV = "SITETK_VAULT_PASSWORD_FILE"
SITES_REPO_ENV = "SITETK_SITES_REPO"
SITES_TOKEN_ENV = "SITETK_SITES_TOKEN"
SITES_TOKEN_FILE_ENV = "SITETK_SITES_TOKEN_FILE"
LIBRARY_REPO_ENV = "SITETK_LIBRARY_REPO"
LIBRARY_TOKEN_ENV = "SITETK_LIBRARY_TOKEN"


def common_options(parser: argparse.ArgumentParser, password: bool = True) -> None:
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    if password:
        parser.add_argument("--vault-password-file", metavar="FILE", help=f"vault password file (default: ${PASSWORD_FILE_ENV}, else a prompt)")


def repo_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", metavar="URL", help=f"sites repository (default: ${SITES_REPO_ENV})")
    parser.add_argument("--workdir", metavar="DIR", help="working clone (default: under the state directory)")
    parser.add_argument("--token-file", metavar="FILE", help=f"file holding the repository token (or ${SITES_TOKEN_FILE_ENV} / ${SITES_TOKEN_ENV})")


def library_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--library", metavar="URL", help=f"component library repository (default: ${LIBRARY_REPO_ENV})")
    parser.add_argument("--library-workdir", metavar="DIR", help="working clone of the library")
    parser.add_argument("--library-token-file", metavar="FILE", help=f"file holding the library token (or ${LIBRARY_TOKEN_ENV})")
