"""Cassandra 5.0's column masks (dynamic data masking) through the python driver: MASKED WITH
in CREATE and ALTER TABLE behind `dynamic_data_masking_enabled`, the masks in
`system_schema.column_masks` and DESCRIBE, masked reads for users without UNMASK (superusers
and GRANT UNMASK read clear values), WHERE on masked columns only with UNMASK or
SELECT_MASKED, and the refusals with Cassandra's messages.

Expectations: Cassandra 5.0's doc page `developing/cql/dynamic-data-masking` (the `patients`
example), `ColumnMask` (messages, `toString`), `SelectStatement.authorize` / `execute` (who
reads masked values, the SELECT_MASKED message) and `ClientState.hasTablePermission` (no
masking without an authorizer).
"""

from __future__ import annotations

import datetime

import pytest
from cassandra import InvalidRequest, Unauthorized
from cassandra.util import Date

from conftest import RingServer, new_server, session_as, stop_and_check

ADMIN = ("cassandra", "cassandra")


@pytest.fixture(scope="module")
def masking(request, tmp_path_factory):
    """A ringdb with passwords, permissions and masking on."""
    tmp = tmp_path_factory.mktemp("masking")
    config = tmp / "ringdb.toml"
    config.write_text('authenticator = "PasswordAuthenticator"\n'
                      'authorizer = "CassandraAuthorizer"\n'
                      'dynamic_data_masking_enabled = true\n')
    srv = RingServer(tmp / "ringdb-data", tmp / "ringdb.stderr.log", owner=request.node.nodeid,
                     extra_args=("--config", str(config)))
    srv.start()
    with session_as(srv, *ADMIN) as admin:
        admin.execute("CREATE KEYSPACE ddm WITH replication = "
                      "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        # The example of Cassandra's page, with a third masked column.
        admin.execute("CREATE TABLE ddm.patients (id int PRIMARY KEY, "
                      "name text MASKED WITH mask_inner(1, null), "
                      "birth date MASKED WITH mask_default(), "
                      "phone text MASKED WITH DEFAULT, note text)")
        admin.execute("INSERT INTO ddm.patients (id, name, birth, phone, note) "
                      "VALUES (1, 'Alice', '1984-01-02', '555-1234', 'clear')")
        admin.execute("INSERT INTO ddm.patients (id, name, birth, phone, note) "
                      "VALUES (2, 'Bob', '1982-02-03', '555-9876', 'also clear')")
        admin.execute("CREATE ROLE reader WITH PASSWORD = 'r' AND LOGIN = true")
        admin.execute("GRANT SELECT ON TABLE ddm.patients TO reader")
        yield srv, admin
    stop_and_check(srv)


@pytest.fixture
def reader(masking):
    srv, _ = masking
    with session_as(srv, "reader", "r") as s:
        yield s


def test_a_user_without_unmask_reads_masked_values(masking, reader):
    rows = reader.execute("SELECT id, name, birth, phone, note FROM ddm.patients").all()
    got = sorted(tuple(r) for r in rows)
    assert got == [(1, "A****", Date(0), "****", "clear"),
                   (2, "B**", Date(0), "****", "also clear")]
    # Functions over a masked column see the masked value.
    row = reader.execute("SELECT blobastext(textasblob(name)), mask_outer(name, 1, 0) "
                         "FROM ddm.patients WHERE id = 1").one()
    assert tuple(row) == ("A****", "*****")


def test_superusers_read_clear_values(masking):
    _, admin = masking
    row = admin.execute("SELECT name, birth, phone FROM ddm.patients WHERE id = 1").one()
    assert tuple(row) == ("Alice", Date(datetime.date(1984, 1, 2)), "555-1234")


def test_unmask_and_select_masked_grants(masking, reader):
    _, admin = masking
    with pytest.raises(Unauthorized) as e:
        reader.execute("SELECT id FROM ddm.patients WHERE name = 'Alice' ALLOW FILTERING")
    assert ("User reader has no UNMASK nor SELECT_MASKED permission on table ddm.patients, "
            "cannot query masked columns [name]") in str(e.value)
    # The key is not masked: a point read is fine.
    assert reader.execute("SELECT name FROM ddm.patients WHERE id = 2").one().name == "B**"

    admin.execute("GRANT SELECT_MASKED ON TABLE ddm.patients TO reader")
    try:
        row = reader.execute("SELECT id, name FROM ddm.patients WHERE name = 'Alice' "
                             "ALLOW FILTERING").one()
        # Filtered on the clear value, returned masked.
        assert tuple(row) == (1, "A****")
    finally:
        admin.execute("REVOKE SELECT_MASKED ON TABLE ddm.patients FROM reader")

    admin.execute("GRANT UNMASK ON TABLE ddm.patients TO reader")
    try:
        row = reader.execute("SELECT name, phone FROM ddm.patients WHERE id = 1").one()
        assert tuple(row) == ("Alice", "555-1234")
    finally:
        admin.execute("REVOKE UNMASK ON TABLE ddm.patients FROM reader")
    assert reader.execute("SELECT name FROM ddm.patients WHERE id = 1").one().name == "A****"


def test_alter_masks_and_the_schema(masking, reader):
    _, admin = masking
    admin.execute("CREATE TABLE ddm.alt (k int PRIMARY KEY, v text, n int)")
    admin.execute("INSERT INTO ddm.alt (k, v, n) VALUES (1, 'secret', 42)")
    admin.execute("GRANT SELECT ON TABLE ddm.alt TO reader")
    assert tuple(reader.execute("SELECT v, n FROM ddm.alt").one()) == ("secret", 42)

    admin.execute("ALTER TABLE ddm.alt ALTER v MASKED WITH mask_outer(1, 2, '#')")
    admin.execute("ALTER TABLE ddm.alt ALTER n MASKED WITH mask_replace(-1)")
    admin.execute("ALTER TABLE ddm.alt ADD w text MASKED WITH mask_null()")
    admin.execute("UPDATE ddm.alt SET w = 'x' WHERE k = 1")
    assert tuple(reader.execute("SELECT v, n, w FROM ddm.alt").one()) == ("#ecr##", -1, None)

    rows = admin.execute("SELECT column_name, function_keyspace, function_name, "
                         "function_argument_types, function_argument_values "
                         "FROM system_schema.column_masks "
                         "WHERE keyspace_name = 'ddm' AND table_name = 'alt'").all()
    assert [tuple(r) for r in rows] == [
        ("n", "system", "mask_replace", ["int"], ["-1"]),
        ("v", "system", "mask_outer", ["int", "int", "text"], ["1", "2", "'#'"]),
        ("w", "system", "mask_null", [], []),
    ]
    table = admin.cluster.metadata.keyspaces["ddm"].tables["alt"]
    assert table is not None
    described = admin.execute("DESCRIBE TABLE ddm.alt").one().create_statement
    assert "v text MASKED WITH system.mask_outer(1, 2, '#')" in described
    assert "n int MASKED WITH system.mask_replace(-1)" in described
    # What DESCRIBE prints creates the same masks.
    admin.execute(described.replace("ddm.alt", "ddm.alt_copy"))
    again = admin.execute("DESCRIBE TABLE ddm.alt_copy").one().create_statement
    assert again == described.replace("ddm.alt", "ddm.alt_copy")

    admin.execute("ALTER TABLE ddm.alt ALTER v DROP MASKED")
    assert reader.execute("SELECT v FROM ddm.alt").one().v == "secret"
    rows = admin.execute("SELECT column_name FROM system_schema.column_masks "
                         "WHERE keyspace_name = 'ddm' AND table_name = 'alt'").all()
    assert [r.column_name for r in rows] == ["n", "w"]


@pytest.mark.parametrize("ddl,message", [
    ("CREATE TABLE ddm.bad (k int PRIMARY KEY, v text MASKED WITH mask_hash())",
     "Masking function mask_hash() return type is blob. This is different to the type of the "
     "masked column v of type text. Masking functions can only be attached to table columns "
     "if they return the same data type as the masked column."),
    ("CREATE TABLE ddm.bad (k int PRIMARY KEY, v text MASKED WITH textasblob())",
     "Not-masking function textasblob() cannot be used for masking table columns"),
    ("CREATE TABLE ddm.bad (k int PRIMARY KEY, v text MASKED WITH nosuch(1))",
     "Unable to find masking function for v, no declared function matches the signature "
     "nosuch(1)"),
    ("CREATE TABLE ddm.bad (k int PRIMARY KEY, v int MASKED WITH mask_inner(1, 1))",
     "Function system.mask_inner requires an argument of type [text|varchar|ascii], "
     "but found argument v of type int"),
    ("ALTER TABLE ddm.patients ALTER nosuch MASKED WITH DEFAULT",
     "Column with name 'nosuch' doesn't exist on table 'ddm.patients'"),
])
def test_refused_masks(masking, ddl, message):
    _, admin = masking
    with pytest.raises(InvalidRequest) as e:
        admin.execute(ddl)
    assert message in str(e.value)


def test_masks_need_the_setting_and_an_authorizer(tmp_path, request):
    srv = new_server(tmp_path, request.node.nodeid)
    srv.start()
    try:
        with session_as(srv) as s:
            s.execute("CREATE KEYSPACE k WITH replication = "
                      "{'class': 'SimpleStrategy', 'replication_factor': 1}")
            with pytest.raises(InvalidRequest) as e:
                s.execute("CREATE TABLE k.t (k int PRIMARY KEY, v text MASKED WITH DEFAULT)")
            assert ("Cannot mask columns because dynamic data masking is not enabled. You can "
                    "enable it with the dynamic_data_masking_enabled property on cassandra.yaml"
                    in str(e.value))
            s.execute("CREATE TABLE k.t (k int PRIMARY KEY, v text)")
            with pytest.raises(InvalidRequest):
                s.execute("ALTER TABLE k.t ALTER v MASKED WITH DEFAULT")
            # Dropping a mask needs no setting.
            s.execute("ALTER TABLE k.t ALTER v DROP MASKED")
    finally:
        stop_and_check(srv)
