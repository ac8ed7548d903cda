"""`--db mysql`: an oned built without MySQL is recognised by its stub and refused; the MariaDB
server listens on loopback only and gets no secret on its command line; the password is a 0600
file and reaches oned.conf's DB vector."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from realsite import config, mysql
from realsite.conftext import ConfText
from tests.realsite import stock
from tests.realsite.test_config import PORTS


def test_an_oned_without_mysql_is_told_by_its_stub(tmp_path: Path) -> None:
    without, built = tmp_path / "oned-sqlite", tmp_path / "oned-mysql"
    without.write_bytes(b"\x7fELF...Aborting oned, MySQL support not compiled!\x00...")
    built.write_bytes(b"\x7fELF...mysql_real_connect\x00...")
    assert not mysql.oned_has_mysql(without) and mysql.oned_has_mysql(built)


def test_the_server_listens_on_loopback_in_the_frontends_folder(tmp_path: Path) -> None:
    server = mysql.Server(tmp_path / "mysql", 43306)
    argv = mysql.server_argv("/usr/sbin/mariadbd", server)
    assert "--no-defaults" == argv[1] and "--bind-address=127.0.0.1" in argv and "--port=43306" in argv
    assert all(str(tmp_path) in a for a in argv if a.startswith(("--datadir", "--socket", "--pid-file", "--log-error")))
    server.folder.mkdir()
    secret = mysql.password(server)
    assert not any(secret in a for a in argv)


def test_the_password_is_private_and_stable(tmp_path: Path) -> None:
    # a new frontend: oned.conf (which holds the password) is written before MariaDB's folder exists
    server = mysql.Server(tmp_path / "state" / "mysql", 1)
    first = mysql.password(server)
    assert stat.S_IMODE(server.password_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(server.folder.stat().st_mode) == 0o700
    assert mysql.password(server) == first and len(first) == 40


def test_oned_conf_names_the_database_and_user(tmp_path: Path) -> None:
    server = mysql.Server(tmp_path, 43306)
    conf = ConfText(config.oned_conf(stock.ONED_7_0, (7, 0, 2), PORTS, db=mysql.db_vector(server)))
    db = conf.vectors("DB")
    assert len(db) == 1
    assert (db[0].get("BACKEND"), db[0].get("SERVER"), db[0].get("PORT"), db[0].get("USER"), db[0].get("DB_NAME")) == (
        "mysql", "127.0.0.1", "43306", "oneadmin", "opennebula")
    assert db[0].get("PASSWD") == mysql.password(server)


def test_setup_sql_is_idempotent_and_refuses_quotes() -> None:
    sql = mysql.setup_sql("abc123")
    assert "CREATE DATABASE IF NOT EXISTS `opennebula`" in sql and "CREATE USER IF NOT EXISTS 'oneadmin'@'127.0.0.1'" in sql
    with pytest.raises(mysql.MysqlError):
        mysql.setup_sql("a'b")
