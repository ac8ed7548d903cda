"""The configuration text editor: finds top-level entries across comments, multi-line strings and
vectors, changes only what it is asked to, and refuses what it cannot edit safely."""

from __future__ import annotations

import pytest

from realsite.conftext import ConfError, ConfText, parse_entries

SAMPLE = '''#*****
# a comment with = signs and "quotes" and [brackets]
#*****
PORT = 2633
LISTEN_ADDRESS = "0.0.0.0"   # trailing comment
SCRIPTS_REMOTE_DIR=/var/tmp/one

VM_ADMIN_OPERATIONS  = "migrate, delete,
    backup, restore"

IM_MAD = [
      NAME       = "monitord",
      # a comment inside a vector, with a ] in it
      ARGUMENTS  = "-c monitord.conf, really",
      THREADS    = 8 ]

HM_MAD = [
    EXECUTABLE = "one_hm",
    ARGUMENTS = "-p 2101 -l 2102 -b 127.0.0.1"]
'''


def test_entries_are_found_across_comments_strings_and_vectors() -> None:
    entries = parse_entries(SAMPLE)
    assert [e.name for e in entries] == ["PORT", "LISTEN_ADDRESS", "SCRIPTS_REMOTE_DIR", "VM_ADMIN_OPERATIONS",
                                         "IM_MAD", "HM_MAD"]
    assert entries[1].scalar == "0.0.0.0"
    assert entries[2].scalar == "/var/tmp/one"
    assert entries[3].scalar == "migrate, delete,\n    backup, restore"
    assert entries[4].vector == (("NAME", "monitord"), ("ARGUMENTS", "-c monitord.conf, really"), ("THREADS", "8"))
    assert entries[5].get("arguments") == "-p 2101 -l 2102 -b 127.0.0.1"


def test_an_edit_changes_only_its_entry() -> None:
    conf = ConfText(SAMPLE)
    conf.set_scalar("PORT", "40001")
    conf.update_vector("HM_MAD", {"ARGUMENTS": "-p 1 -l 2 -b 127.0.0.1"})
    before, after = SAMPLE.splitlines(), conf.text.splitlines()
    assert after[:3] == before[:3]  # comments kept byte for byte
    assert "PORT = 40001" in after
    assert conf.text.count("VM_ADMIN_OPERATIONS") == 1 and "    backup, restore\"" in conf.text
    assert conf.entries("HM_MAD")[0].vector == (("EXECUTABLE", "one_hm"), ("ARGUMENTS", "-p 1 -l 2 -b 127.0.0.1"))
    assert conf.entries("IM_MAD")[0].get("THREADS") == "8"


def test_set_scalar_appends_when_absent_and_keeps_one_entry() -> None:
    conf = ConfText("A = 1\nB = 2\nA = 3\n")
    conf.set_scalar("A", "x y", quoted=True)
    conf.set_scalar("C", "4")
    assert [(e.name, e.scalar) for e in conf.entries()] == [("A", "x y"), ("B", "2"), ("C", "4")]
    assert conf.scalar("A") == "x y" and conf.scalar("MISSING") is None


def test_set_vector_replaces_the_matching_one_or_appends() -> None:
    conf = ConfText(SAMPLE)
    conf.set_vector("IM_MAD", [("NAME", "dummy"), ("EXECUTABLE", "one_im_sh")], lambda e: e.get("NAME") == "dummy")
    conf.set_vector("IM_MAD", [("NAME", "dummy"), ("EXECUTABLE", "one_im_sh2")], lambda e: e.get("NAME") == "dummy")
    names = [(e.get("NAME"), e.get("EXECUTABLE")) for e in conf.vectors("IM_MAD")]
    assert names == [("monitord", ""), ("dummy", "one_im_sh2")]
    assert conf.remove("IM_MAD", lambda e: e.get("NAME") == "dummy") == 1
    assert conf.update_vector("NO_SUCH", {"A": "1"}) == 0


def test_quotes_in_values_survive_a_round_trip() -> None:
    conf = ConfText("X = [ A = \"1\" ]\n")
    conf.set_vector("X", [("A", 'say "hi" \\ there')])
    assert conf.entries("X")[0].get("A") == 'say "hi" \\ there'
    with pytest.raises(ConfError):  # the platform's parser would read its closing quote as escaped
        conf.set_vector("X", [("A", "ends in \\")])


@pytest.mark.parametrize("text", ['A = "open\n', "A = [ B = 1\n", "A = [ B = [ C = 1 ] ]\n", "= 1\n", "A 1\n",
                                  "A = [ = 1 ]\n"])
def test_text_it_cannot_edit_safely_is_refused(text: str) -> None:
    with pytest.raises(ConfError):
        ConfText(text)
