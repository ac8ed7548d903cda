"""`--db mysql`: a MariaDB server of the frontend's own, on loopback, for an oned built with MySQL.

The two backends answer some queries differently (the pool's JSON-path search: refused on
sqlite, a substring match on MySQL), so the console is tried on both. The installs the harness
usually runs are built with `mysql=no`: oned then carries the stub that aborts
("MySQL support not compiled", `include/MySqlDB.h` 155 at release-7.0.2), which
`oned_has_mysql` looks for so such an install is refused before anything starts. Building one
with MySQL is the operator's step (shared/reference/real-platform.md: `MySqlDB.cc`, `Nebula.cc`
and `Monitor.cc` compiled with `-DMYSQL_DB`, oned and onemonitord linked with `-lmariadb`), not
this repository's.

The server is Debian's `mariadb-server` (`apt-get install mariadb-server`), run as one more daemon
of the frontend: its data folder, socket and log in `<state>/mysql`, TCP on 127.0.0.1 only, root
reached through the socket alone. The database user's password is generated, kept in a 0600
file and written into oned.conf (made 0600); SQL goes to the client on stdin, never in argv.
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from realsite.config import LOOPBACK, mysql_db

#: what oned holds when built without MYSQL_DB (include/MySqlDB.h, the stub class)
STUB = b"MySQL support not compiled"
DATABASE = "opennebula"
USER = "oneadmin"


class MysqlError(RuntimeError):
    pass


@dataclass(frozen=True)
class Server:
    folder: Path
    port: int

    @property
    def datadir(self) -> Path:
        return self.folder / "data"

    @property
    def socket(self) -> Path:
        return self.folder / "mysqld.sock"

    @property
    def log(self) -> Path:
        return self.folder / "mysqld.log"

    @property
    def password_file(self) -> Path:
        return self.folder / "oneadmin-password"


def oned_has_mysql(oned: Path) -> bool:
    """Whether this oned binary was built with MySQL (it lacks the aborting stub)."""
    return STUB not in oned.read_bytes()


def binaries() -> tuple[str, str, str]:
    """(server, install-db, client) of Debian's mariadb-server, or MysqlError saying to install it."""
    found = [shutil.which(name) or (f"/usr/sbin/{name}" if Path(f"/usr/sbin/{name}").exists() else "")
             for name in ("mariadbd", "mariadb-install-db", "mariadb")]
    if not all(found):
        raise MysqlError("--db mysql needs MariaDB: apt-get install mariadb-server")
    return found[0], found[1], found[2]


def server_argv(server_bin: str, server: Server) -> list[str]:
    """mariadbd on 127.0.0.1 only, everything in the frontend's folder, nothing read from /etc."""
    return [server_bin, "--no-defaults", f"--datadir={server.datadir}", f"--socket={server.socket}",
            f"--port={server.port}", f"--bind-address={LOOPBACK}", f"--pid-file={server.folder / 'mysqld.pid'}",
            f"--log-error={server.log}", "--user=root", "--skip-name-resolve", "--innodb-buffer-pool-size=64M",
            "--transaction-isolation=READ-COMMITTED"]


def setup_sql(password: str) -> str:
    """The database and its user (what oned.conf's DB names), idempotent."""
    if "'" in password or "\\" in password:
        raise MysqlError("the generated password must not hold quotes or backslashes")
    return (f"CREATE DATABASE IF NOT EXISTS `{DATABASE}`;\n"
            f"CREATE USER IF NOT EXISTS '{USER}'@'{LOOPBACK}' IDENTIFIED BY '{password}';\n"
            f"ALTER USER '{USER}'@'{LOOPBACK}' IDENTIFIED BY '{password}';\n"
            f"GRANT ALL PRIVILEGES ON `{DATABASE}`.* TO '{USER}'@'{LOOPBACK}';\n"
            "FLUSH PRIVILEGES;\n")


def initialise(install_bin: str, server: Server) -> None:
    """A new data folder (once)."""
    if (server.datadir / "mysql").exists():
        return
    server.folder.mkdir(parents=True, exist_ok=True)
    server.folder.chmod(0o700)
    result = subprocess.run([install_bin, "--no-defaults", f"--datadir={server.datadir}", "--user=root",
                             "--auth-root-authentication-method=socket", "--skip-test-db"],
                            capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise MysqlError(f"mariadb-install-db failed ({result.returncode}): {result.stderr[-1500:]}")


def password(server: Server) -> str:
    """The database user's password, made once and kept 0600."""
    path = server.password_file
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)  # oned.conf is written before the server starts
        path.touch(mode=0o600)
        path.write_text(secrets.token_hex(20) + "\n")
    path.chmod(0o600)
    return path.read_text().strip()


def run_sql(client_bin: str, server: Server, sql: str, *, timeout: float = 60) -> str:
    result = subprocess.run([client_bin, "--no-defaults", f"--socket={server.socket}", "-u", "root", "-N", "-B"],
                            input=sql, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise MysqlError(f"mariadb: {result.stderr.strip()[-500:]}")
    return result.stdout


def answers(client_bin: str, server: Server) -> str | None:
    """None once the server answers on its socket (else why not)."""
    if not server.socket.exists():
        return "no socket yet"
    try:
        run_sql(client_bin, server, "SELECT 1;\n", timeout=10)
    except (MysqlError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    return None


def db_vector(server: Server) -> list[tuple[str, str]]:
    return mysql_db(port=server.port, user=USER, password=password(server), database=DATABASE)
