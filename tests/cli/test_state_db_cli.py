"""--state-db: the URL forms, and one line (exit 2) for every database that cannot be used: no
PostgreSQL extra, a server not listening, a wrong password, a missing database. The last three
against a real server on loopback (skipped, with the reason, where none can start)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from kernelskill.cli.main import main
from kernelskill.state.state_db import StateDBError, describe_error, parse_state_db, redact

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURES))
import postgres_server  # noqa: E402

postgres, pg_url = postgres_server.postgres, postgres_server.pg_url  # the fixtures
PROBLEM = str(FIXTURES / "relu_scale.py")


def test_url_forms() -> None:
    assert parse_state_db("sqlite:///tmp/a.sqlite").path == Path("/tmp/a.sqlite")
    assert parse_state_db("sqlite://rel/a.sqlite").path == Path("rel/a.sqlite")
    assert parse_state_db("/tmp/b.sqlite").path == Path("/tmp/b.sqlite")  # a bare path is SQLite
    pg = parse_state_db("postgres://u:pw@h:5433/db?sslmode=disable")
    assert pg.is_postgres and pg.url.startswith("postgresql://") and pg.redacted() == \
        "postgresql://u:***@h:5433/db?sslmode=disable"
    assert redact("postgresql://u@h/db") == "postgresql://u@h/db"
    for bad, said in (("mysql://h/db", "unknown kind 'mysql'"), ("postgresql://u:pw@h", "names no database"),
                      ("sqlite://", "names no file")):
        with pytest.raises(StateDBError, match=said) as e:
            parse_state_db(bad)
        assert "pw" not in str(e.value)


def test_errors_say_what_to_do_in_one_line() -> None:
    url = "postgresql://ks:secret@db.example:6543/team"
    cases = {
        'connection failed: connection to server at "10.0.0.1", port 6543 failed: Connection refused\n'
        "\tIs the server running on that host and accepting TCP/IP connections?":
            "cannot reach PostgreSQL at db.example:6543",
        'FATAL:  password authentication failed for user "ks"': "refused the login of user 'ks'",
        'FATAL:  database "team" does not exist': "has no database 'team': create it",
        "could not translate host name \"db.example\" to address": "cannot resolve PostgreSQL host",
        "permission denied for schema public": "kernelskill state setup postgresql://ks:***@db.example",
    }
    for raw, want in cases.items():
        line = describe_error(url, Exception(raw))
        assert want in line and "\n" not in line and "secret" not in line, line


def test_bench_json_never_keeps_the_password() -> None:
    from kernelskill.bench.records import BenchSettings

    s = BenchSettings(paths=["/p"], device="cpu", size="small", author="builtin", rounds=1,
                      state_db="postgresql://ks:secret@h/db")
    assert s.state_db.endswith("secret@h/db") and "secret" not in s.model_dump_json()


def test_postgres_without_the_extra_is_an_install_hint(tmp_path: Path) -> None:
    code = ("import sys; sys.modules['psycopg'] = None\n"
            "from kernelskill.cli.main import main\n"
            f"sys.exit(main(['optimize', {PROBLEM!r}, '--device', 'cpu', '--state-db', "
            "'postgresql://ks@127.0.0.1:1/db']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == ("kernelskill optimize: PostgreSQL support is not installed: "
                                   "pip install 'kernelskill[postgres]'")


def _one_line(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_a_server_that_cannot_be_used_is_one_line(postgres: postgres_server.Server,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    closed = postgres_server._free_port()
    err = _one_line(capsys, "optimize", PROBLEM, "--thread", "t", "--state-db", postgres.url(port=closed))
    assert f"cannot reach PostgreSQL at 127.0.0.1:{closed}" in err
    err = _one_line(capsys, "optimize", PROBLEM, "--thread", "t", "--state-db", postgres.url(password="nope"))
    assert "refused the login of user 'kernelskill'" in err and "nope" not in err
    err = _one_line(capsys, "state", "setup", postgres.url("nosuchdb"))
    assert "has no database 'nosuchdb': create it" in err


def test_setup_creates_the_tables_once(pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    import psycopg

    for _ in range(2):  # idempotent: every command runs it on first use
        assert main(["state", "setup", pg_url]) == 0
        assert "tables ready" in capsys.readouterr().out
    with psycopg.connect(pg_url) as conn:
        tables = {r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
    assert {"checkpoints", "checkpoint_writes", "checkpoint_blobs", "checkpoint_migrations",
            "kernelskill_attempts"} <= tables
