"""`kernelskill state setup|migrate`: the state database (threads and experience statistics).

    kernelskill state setup URL              create the tables (what every command does on first use;
                                             for a database owner when runners may not CREATE)
    kernelskill state migrate SOURCE TARGET  copy a SQLite checkpoint history (all threads, all
                                             checkpoints and writes) into PostgreSQL
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..state.state_db import StateDB

EXAMPLES = (
    "kernelskill state migrate ~/.cache/kernelskill/threads.sqlite postgresql://me@db.internal/kernelskill",
    "kernelskill state setup postgresql://owner@db.internal/kernelskill",
)


def parse_args(argv: list[str]) -> argparse.Namespace:
    from .main import HelpFormatter, example

    p = argparse.ArgumentParser(prog="kernelskill state", formatter_class=HelpFormatter,
                                description="the state database: threads and experience statistics",
                                epilog=example(*EXAMPLES))
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    setup = sub.add_parser("setup", help="create the checkpoint and statistics tables in a database")
    setup.add_argument("url", metavar="URL", help="postgresql://USER@HOST:PORT/DB or sqlite:///PATH")
    mig = sub.add_parser("migrate", help="copy a SQLite checkpoint history into another store")
    mig.add_argument("source", metavar="SQLITE_PATH_OR_URL",
                     help="the SQLite file (or sqlite:///PATH) to copy")
    mig.add_argument("target", metavar="POSTGRES_URL", help="postgresql://USER@HOST:PORT/DB to copy into")
    return p.parse_args(argv)


def run(args: argparse.Namespace) -> int:
    from ..state.config import KernelSkillConfig
    from ..state.state_db import StateDBError, parse_state_db
    from .main import UsageError
    from .options import with_state_db

    try:
        if args.action == "setup":
            _, db = with_state_db(KernelSkillConfig(), args.url)
            return _setup(db)
        source, target = parse_state_db(args.source), parse_state_db(args.target)
        if source.is_postgres:
            raise UsageError(f"migrate copies from a SQLite history, not {source.redacted()}")
        if source.path is not None and not source.path.is_file():
            raise UsageError(f"no SQLite checkpoint file at {source.path}")
        with_state_db(KernelSkillConfig(), target.url)  # the extra, before any work
        from ..graph.migrate import migrate

        copied = migrate(source, target)
    except StateDBError as e:
        raise UsageError(str(e)) from None
    there = f" ({copied.already} of them already there: unchanged)" if copied.already else ""
    print(f"copied {copied.threads} thread(s), {copied.checkpoints} checkpoint(s){there} and "
          f"{copied.writes} pending write(s) from {source.url} into {target.redacted()}")
    return 0


def _setup(db: StateDB) -> int:
    from ..graph.checkpointer import open_checkpointer
    from ..skill_index.stats_sql import setup_stats

    with open_checkpointer(db):  # its setup() creates the checkpoint tables
        pass
    setup_stats(db)
    print(f"{db.redacted()}: checkpoint and statistics tables ready")
    return 0
