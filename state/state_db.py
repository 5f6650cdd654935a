"""Where threads and experience statistics persist: one URL for both.

`sqlite:///PATH` (or a bare path) is one user on one host: checkpoints in a SQLite file, statistics
in a JSON file beside the cache. `postgresql://USER[:PASSWORD]@HOST:PORT/DB` is a team on many hosts:
both in one PostgreSQL database, so a thread resumes on whichever host picks it up and every host's
attempts teach the skill ranking. PostgreSQL needs the optional extra; without it, and for every
unreachable or misconfigured server, the user gets one line that says what to do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

INSTALL_HINT = "PostgreSQL support is not installed: pip install 'kernelskill[postgres]'"
FORMS = "sqlite:///PATH or postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE"


class StateDBError(Exception):
    """A state database that cannot be used as given: one line for the user."""


@dataclass(frozen=True)
class StateDB:
    kind: Literal["sqlite", "postgresql"]
    url: str
    path: Path | None = None  # the SQLite file

    @property
    def is_postgres(self) -> bool:
        return self.kind == "postgresql"

    def redacted(self) -> str:
        """The URL without its password: what messages, logs and bench.json may show."""
        return redact(self.url)


def redact(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def parse_state_db(value: str | Path | StateDB) -> StateDB:
    """Pure: `sqlite:///abs/path`, `sqlite://relative/path`, a bare path, or `postgresql://...`
    (also `postgres://`). StateDBError for anything else."""
    if isinstance(value, StateDB):
        return value
    if isinstance(value, Path):
        return StateDB("sqlite", f"sqlite://{value}", value)
    text = value.strip()
    scheme = text.split("://", 1)[0].lower() if "://" in text else ""
    if scheme == "sqlite":
        rest = text.split("://", 1)[1]
        if not rest:
            raise StateDBError(f"--state-db {text!r} names no file: use {FORMS}")
        path = Path(rest).expanduser()
        return StateDB("sqlite", f"sqlite://{path}", path)
    if scheme in ("postgresql", "postgres"):
        url = "postgresql://" + text.split("://", 1)[1]
        if not urlsplit(url).path.strip("/") and "dbname=" not in url:
            raise StateDBError(f"--state-db {redact(url)} names no database: use {FORMS}")
        return StateDB("postgresql", url)
    if not scheme:
        return parse_state_db(Path(text).expanduser())
    raise StateDBError(f"--state-db {redact(text)}: unknown kind {scheme!r}; use {FORMS}")


def require_postgres() -> None:
    """The extra's packages, or the install hint as a StateDBError."""
    try:
        import psycopg  # noqa: F401
        from langgraph.checkpoint.postgres import PostgresSaver  # noqa: F401
    except ImportError:
        raise StateDBError(INSTALL_HINT) from None


# LangGraph's PostgresSaver needs these: autocommit (its setup and writes commit themselves),
# dict rows (it reads columns by name), no server-side prepared statements (poolers such as
# PgBouncer in transaction mode reject them).
CONNECT_KWARGS: dict[str, Any] = {"autocommit": True, "prepare_threshold": 0, "connect_timeout": 10}


def connect(db: StateDB) -> Any:
    """An open psycopg connection to `db` (PostgreSQL), or StateDBError in one line."""
    require_postgres()
    import psycopg
    from psycopg.rows import dict_row

    try:
        return psycopg.connect(db.url, row_factory=dict_row, **CONNECT_KWARGS)
    except psycopg.Error as e:
        raise StateDBError(describe_error(db.url, e)) from None


def describe_error(url: str, error: BaseException) -> str:
    """Pure: one line for a PostgreSQL failure, naming the server and what to do."""
    parts = urlsplit(url)
    where = f"{parts.hostname or 'localhost'}:{parts.port or 5432}"
    database = parts.path.strip("/") or "?"
    text = " ".join(str(error).split())
    low = text.lower()
    if "password authentication failed" in low or "no password supplied" in low or \
            "authentication failed" in low or "no pg_hba.conf entry" in low:
        return (f"PostgreSQL at {where} refused the login of user {parts.username or '?'!r}: check the user "
                "and password in --state-db (or PGPASSWORD, ~/.pgpass) and the server's pg_hba.conf")
    if re.search(r'database ".*" does not exist', low):
        return (f"PostgreSQL at {where} has no database {database!r}: create it (createdb -h "
                f"{parts.hostname or 'localhost'} -p {parts.port or 5432} {database}) or name another")
    if "could not translate host name" in low or "name or service not known" in low:
        return f"cannot resolve PostgreSQL host {parts.hostname!r}: check the host in --state-db"
    if "permission denied" in low or "must be owner" in low:
        return (f"PostgreSQL at {where}, database {database!r}: {_first(text)}; have the database owner run "
                f"`kernelskill state setup {redact(url)}` once, or grant this user CREATE on it")
    if "connection refused" in low or "timeout" in low or "timed out" in low or "could not connect" in low \
            or "connection failed" in low or "server closed the connection" in low:
        return (f"cannot reach PostgreSQL at {where} ({_first(text)}): is the server running and "
                "accepting TCP connections there? check the host and port in --state-db")
    return f"PostgreSQL at {where}, database {database!r}: {_first(text)}"


def _first(text: str) -> str:
    """The informative part of psycopg's message, without its 'connection to server at ...' prefix."""
    text = re.sub(r'^connection failed: connection to server at "[^"]*"(, port \d+)? failed: ', "", text)
    return text[:200]


def state_db_of(paths: Any) -> StateDB:
    """The configuration's state database (a `PathsConfig`): `state_db` when set, else the SQLite
    checkpoint file."""
    return parse_state_db(paths.state_db) if paths.state_db else parse_state_db(Path(paths.checkpoints))
