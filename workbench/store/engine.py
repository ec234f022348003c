"""Opening the store: one SQL implementation chosen by URL (DuckDB file by default), revision-checked.

A DuckDB file admits one writing process; a second one waits a bounded time for the lock and then
gets a clear message. Sessions hold the file only while open (NullPool), so short writes interleave.
The methods callers use (typed records in and out) are in `store.reads` and `store.writes`.
"""

from __future__ import annotations

import functools
import re
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

from workbench.errors import BadInput, StoreError, StoreLocked, StoreOutdated, WbError
from workbench.store.reads import StoreReads
from workbench.store.writes import StoreBundles, StoreWrites

DEFAULT_DB = "wb.duckdb"
LOCK_WAIT_S = 15.0
T = TypeVar("T")
MIGRATIONS_DIR = Path(__file__).resolve().parents[1] / "migrations"


FLAG = "--db"
ENV = "$WB_DB"
KEYWORD = "db="  # the Python API's keyword argument (workbench.api): its callers gave no flag


def giving(source: str, value: object) -> str:
    """How a user gives the store `value` where `source` (`--db`, `$WB_DB` or `db=`) gave the one at fault."""
    if source == KEYWORD:
        return f"db={str(value)!r}"
    return f"WB_DB={value}" if source == ENV else f"--db {value}"


def naming(source: str, value: object) -> str:
    """The value at fault as a message about it opens: `--db X`, `$WB_DB X`, or `db='X'` in the API."""
    return f"db={str(value)!r}" if source == KEYWORD else f"{source} {value}"


def resolve_url(db: str | None, source: str = FLAG) -> tuple[str, Path | None]:
    """(SQLAlchemy URL, local DuckDB path or None) from `db` or the default file. `source` is where the value came
    from (`--db`, `$WB_DB` when the environment gave it, `db=` in the Python API): every error about the value
    names it."""
    if db is not None and not db.strip():
        raise BadInput(f"{source} is empty", where=source,
                       hint=f"give a DuckDB file path or a SQLAlchemy URL, or leave {source} out")
    value = db or DEFAULT_DB
    if "://" in value:
        _check_scheme(value, source)
        if _backend(value) == "duckdb":
            path = _duckdb_path(value, source)
            _check_duckdb_file(path, source)
            return value, path
        return _with_driver(value), None
    path = Path(value).expanduser().resolve()
    _check_duckdb_file(path, source)
    return f"duckdb:///{path}", path


def _duckdb_path(url: str, source: str) -> Path:
    """The file a duckdb:///PATH URL names. `duckdb://` and `duckdb:///:memory:` are in-memory databases, which
    hold nothing once the command ends (each step of an upgrade would open a fresh one), and `duckdb://NAME`
    (two slashes) is not the form wb reads a file from: each is refused as bad input."""
    rest = url.split("://", 1)[1]
    path = rest[1:].split("?", 1)[0] if rest.startswith("/") else ""
    if not path or path == ":memory:":
        why = "an in-memory DuckDB store is gone when the command ends" if rest in ("", "/:memory:") or \
            rest.startswith("?") else "a DuckDB file is named duckdb:///PATH (three slashes)"
        raise BadInput(f"{naming(source, url)} names no file: {why}", where=source,
                       hint=f"name a file: {giving(source, 'duckdb:///PATH')} or a plain path "
                            f"(wb creates it if it is missing)")
    return Path(path)


DUCKDB_MAGIC = b"DUCK"  # bytes 8-11 of every DuckDB database file (after an 8-byte checksum)


def _check_duckdb_file(path: Path, source: str) -> None:
    """Refuse, before DuckDB opens it, a --db (or $WB_DB) that names a folder or a file that is not a DuckDB database.

    DuckDB's own message for both reads like damage ("not a valid DuckDB database"), and "restore it from a
    backup" is wrong advice for `--db /tmp` or `--db README.md`: the path is simply not a store. Only the
    first bytes are read; nothing is opened for writing. A file with DuckDB's header that will not open is
    damage, and `Store._connect_error` says so."""
    if path.is_dir():
        raise BadInput(f"{naming(source, path)} is a folder, not a DuckDB database file", where=source,
                       hint=f"name a file, e.g. {giving(source, path / DEFAULT_DB)} (wb creates it if it is missing)")
    if not path.is_file():
        return  # missing (created on the first write), or something DuckDB reports on itself
    try:
        with path.open("rb") as f:
            head = f.read(12)
    except OSError as exc:
        raise BadInput(f"{naming(source, path)} cannot be read: {exc.strerror}", where=source,
                       hint=f"check the file's permissions, or point {source} at another file") from None
    if head[8:12] != DUCKDB_MAGIC:
        what = "is empty" if not head else "is not a DuckDB database file"
        raise NotAStore(f"{naming(source, path)} {what}" + (", not a DuckDB database file" if not head else ""),
                        where=source, hint=f"point {source} at a wb store, or at a new file name (wb creates it); "
                             f"wb did not touch {path.name}", path=path, source=source)


class NotAStore(BadInput):
    """--db (or $WB_DB) names a file that is no DuckDB database. Its hint is a write's (a new file name is created);
    a read, which never creates a store, gives `for_read`'s."""

    def __init__(self, message: str, *, hint: str, where: str, path: Path, source: str) -> None:
        super().__init__(message, hint=hint, where=where)
        self.path, self.source = path, source

    def for_read(self) -> BadInput:
        return BadInput(self.message, where=self.where,
                        hint=f"point {self.source} at a wb store that exists (a read creates none), or leave it out "
                             f"for the workbench's own; wb did not touch {self.path.name}")


SCHEMES = ("duckdb", "postgresql", "postgres")


def _backend(url: str) -> str:
    """A URL's database, without its driver: `postgresql` of postgresql+psycopg://…"""
    return url.split("://", 1)[0].split("+", 1)[0].lower()


def _check_scheme(url: str, source: str) -> None:
    """Only the SQL backends wb is tested on; anything else is bad input naming --db (or $WB_DB)."""
    scheme, backend = url.split("://", 1)[0], _backend(url)
    if backend == "sqlite":
        raise BadInput(f"{naming(source, _redact(url))}: sqlite is not supported as a store", where=source,
                       hint="use a DuckDB file (a plain path) or a PostgreSQL URL (postgresql+psycopg://…)")
    if backend not in SCHEMES:
        raise BadInput(f"{naming(source, _redact(url))}: unknown store scheme {scheme!r}", where=source,
                       hint="use a DuckDB file (a plain path, or duckdb:///PATH) or postgresql+psycopg://…")
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        make_url(url)
    except (ValueError, ArgumentError) as exc:  # SQLAlchemy's int() of a port that is no number raises ValueError
        shown = re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)  # _redact needs a URL it can parse
        why = "its port is not a number" if "int()" in str(exc) else str(exc)
        raise BadInput(f"{naming(source, shown)}: not a valid store URL ({why})", where=source,
                       hint=f"check {source}: postgresql+psycopg://USER@HOST:PORT/DATABASE, PORT a number") from None


# A bare PostgreSQL URL means the driver that the `postgres` extra installs (psycopg 3), not
# SQLAlchemy's historical default (psycopg2), which wb does not depend on.
_DEFAULT_DRIVERS = {"postgresql://": "postgresql+psycopg://", "postgres://": "postgresql+psycopg://"}


def _with_driver(url: str) -> str:
    for bare, full in _DEFAULT_DRIVERS.items():
        if url.startswith(bare):
            return full + url[len(bare):]
    return url


def interrupted_query(exc: BaseException | None) -> bool:
    """Whether `exc` is Ctrl-C reaching a database query (DuckDB ends the query and raises its own error in
    place of KeyboardInterrupt)."""
    import duckdb

    from workbench.errors import in_chain

    return in_chain(exc, (KeyboardInterrupt, duckdb.InterruptException)) is not None or \
        in_chain(exc, (RuntimeError,), lambda e: str(e).strip() == "Query interrupted") is not None


def url_has_password(db: str) -> bool:
    """Whether a --db value carries a password (such a value is never printed, in a hint either): before the host,
    or in the query, where libpq takes one too (a parameter of `secrets.LIBPQ_SECRETS`: `?password=`,
    `?sslpassword=`, `?oauth_client_secret=`, any case)."""
    from workbench.secrets import LIBPQ_SECRETS

    if "://" not in db:
        return False
    from sqlalchemy.engine import make_url

    try:
        url = make_url(db)
    except Exception:
        return True  # unreadable: do not risk showing it
    return url.password is not None or any(k.lower() in LIBPQ_SECRETS for k in url.query)


def url_for_command(db: str) -> str:
    """A --db value as a command to paste gives it: a password (before the host, and each libpq secret parameter's
    in the query) replaced by the mask, for the user to put it back; unchanged, the server refuses the command,
    where one without --db read the default store. All up to the last `@` before the query is taken as the
    password, so a password holding an unescaped `@` or `/` is never shown in part."""
    from workbench.secrets import MASK, mask_libpq

    scheme, sep, rest = db.partition("://")
    before, q, query = rest.partition("?")
    user, colon, _ = before[:before.rfind("@")].partition(":") if "@" in before else ("", "", "")
    if colon and "/" not in user:
        before = f"{user}:{MASK}{before[before.rfind('@'):]}"
    return mask_libpq(f"{scheme}{sep}{before}{q}{query}", MASK)


def _redact(url: str) -> str:
    """`url` as a message shows it: a password masked, before the host or in the query (`url_has_password`)."""
    from sqlalchemy.engine import make_url

    from workbench.secrets import mask_libpq

    try:
        shown = make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<store URL>"
    return mask_libpq(shown, "***")


def holding(fn: Callable[..., T]) -> Callable[..., T]:
    """Run `fn(store, ...)` with its store held open (`Store.held`) for the whole call."""
    @functools.wraps(fn)
    def wrapper(store: "Store", *args: Any, **kwargs: Any) -> T:
        with store.held():
            return fn(store, *args, **kwargs)
    return wrapper


# What a PostgreSQL server says when the URL names what it does not have.
_REFUSED_BY_SERVER = re.compile(r'(database|role) "[^"]*" does not exist|password authentication failed')

# What libpq and psycopg say, before connecting, of an option in the URL's query that they do not take.
_BAD_OPTION = re.compile(r"invalid \w+ value|bad value for \w+|invalid URI query parameter|invalid connection option")


class Store(StoreReads, StoreWrites, StoreBundles):
    """The store at one URL. Use `open_store()`. Sessions (`session()`) stay inside the store package
    and its tests; everyone else calls the typed methods."""

    def __init__(self, url: str, path: Path | None, *, read_only: bool, lock_wait_s: float = LOCK_WAIT_S,
                 source: str = FLAG, given: str | None = None) -> None:
        from sqlalchemy import create_engine, pool
        from sqlalchemy.exc import ArgumentError, NoSuchModuleError

        from workbench.store.redaction import install_redaction

        install_redaction()  # every text a session flushes is redacted (see workbench.secrets)
        self.url = url
        self.path = path
        self.read_only = read_only
        self.lock_wait_s = lock_wait_s
        self.source = source  # where the store's URL came from (`--db`, `$WB_DB`, `db=`), as errors about it name it
        self.named_by = _given(source, given is None)  # the same as messages bracket it (or the default store)
        self._held: Any = None  # the connection `held()` keeps open
        self._opened = False  # a connection was made: this command has begun using the store
        # An empty store whose schema the first transaction creates (open_store's `deferred_schema`).
        self._schema_pending = False
        # A server's URL as the user gave it (postgresql://), not with the driver wb adds to reach it.
        self.name = str(path) if path is not None else _redact(given if given and "://" in given else url)
        connect_args = {"read_only": True} if (read_only and path is not None) else {}
        try:
            self.engine = create_engine(url, poolclass=pool.NullPool, connect_args=connect_args)
        except ModuleNotFoundError as exc:
            extra = " (pip install 'wb[postgres]')" if url.startswith("postgres") else ""
            raise BadInput(f"{naming(source, self.name)}: the store URL needs the database driver {exc.name!r}, "
                           f"which is not installed{extra}", where=source,
                           hint="install the driver, or use a DuckDB file") from exc
        except (ImportError, NoSuchModuleError) as exc:
            raise BadInput(f"{naming(source, self.name)}: the database driver is not installed ({exc})", where=source,
                           hint="for PostgreSQL: pip install 'wb[postgres]' and use postgresql+psycopg://") from None
        except ArgumentError as exc:
            raise BadInput(f"{naming(source, self.name)}: not a valid store URL ({exc})", where=source) from None

    @property
    def is_duckdb(self) -> bool:
        return self.engine.dialect.name == "duckdb"

    def _connect_error(self, exc: Exception) -> WbError:
        text = str(exc)
        if "Could not set lock" in text or "Conflicting lock" in text:
            return self._locked(text)
        unreadable_file = self.path is not None and self.path.exists() and "IO Error" in text
        if ("not a valid DuckDB database" in text or "Corrupt" in text or "corrupt" in text
                or "Is a directory" in text or unreadable_file):
            # Bad input (exit 2): --db names something that is not a store.
            return BadInput(f"the store {self.name} is not a readable DuckDB database ({text.splitlines()[0]})",
                            where=self.source,
                            hint=f"restore it from a backup or point {self.source} at another file; wb did not "
                                 "modify it")
        first = text.splitlines()[0] if text else type(exc).__name__
        if self.path is None and _REFUSED_BY_SERVER.search(text):
            # The server answered: --db names a database, role or password it does not have (exit 2, as a DuckDB
            # path naming no store). A server that cannot be reached stays a failure while running.
            return BadInput(f"cannot open the store {self.name} ({self.source}): {first}", where=self.source,
                            hint=f"check {self.source}")
        if self.path is None and _BAD_OPTION.search(text):
            # The driver refused an option in the URL's query before connecting: --db's value, not the server.
            return BadInput(f"cannot open the store {self.name} ({self.source}): {first}", where=self.source,
                            hint=f"check the options after '?' in {self.source}")
        # Any other refusal to connect: the environment's (exit 1). A server that is down or unreachable is most of
        # them, and the hint says where to look; wb cannot tell a mistyped host or port from a stopped server.
        hint = f"check {self.source}"
        if self.path is None:
            hint = f"check that the store's server is up and reachable, and that {self.source} names its host and port"
        if not self._opened:
            hint += "; nothing was read or written"
        return StoreError(f"cannot open the store {self.name} ({self.source}): {first}", where=self.source, hint=hint)

    def _locked(self, text: str) -> StoreLocked:
        """The file is locked by another process, which DuckDB names ('Conflicting lock is held in PROGRAM
        (PID N)'). Found at the first connection, nothing was read or written (exit 2); found later, the
        command had begun, and may have run or written something (exit 1)."""
        held = re.search(r"held in (.+?) \(PID (\d+)\)", text)
        by = f" (PID {held.group(2)}, {held.group(1)})" if held else ""
        what = "wait for it to end (another wb command), or close the reader holding the file (a notebook, the " \
               f"duckdb shell), or point this one at another store with {self.source}"
        if self._opened:
            return StoreLocked(f"the store {self.name} was locked by another process{by} after this command had "
                               f"begun using it, for longer than the {self.lock_wait_s:g} s it waits",
                               hint=what, began=True)
        return StoreLocked(f"the store {self.name} is locked by another process{by}; nothing was read or written "
                           f"(waited {self.lock_wait_s:g} s)", hint=what)

    def _open(self) -> Any:
        """A SQLAlchemy connection, retried for a bounded time while the file is locked."""
        import duckdb
        from sqlalchemy.exc import DBAPIError

        deadline = time.monotonic() + self.lock_wait_s
        while True:
            try:
                conn = self.engine.connect()
                self._opened = True
                return conn
            # duckdb raises its own errors before SQLAlchemy wraps them
            except (DBAPIError, duckdb.Error) as exc:
                err = self._connect_error(exc.orig if isinstance(exc, DBAPIError) and exc.orig else exc)
                if isinstance(err, StoreLocked) and time.monotonic() < deadline:
                    time.sleep(0.2)
                    continue
                raise err from exc

    @contextmanager
    def held(self) -> Iterator[None]:
        """Keep a DuckDB store open over a block of many short sessions (an analysis, a site, a command that
        reads). Each session's connection opens the file afresh (the pool keeps none): ~40 ms of CPU to open
        the file, read its catalog and checkpoint it at the close. With one connection held open the others
        reuse the open database: ~3 ms (benchmarks/store_held_bench.py). The file's lock keeps other processes
        out meanwhile: never hold it around a workload. PostgreSQL and a nested block: nothing to do."""
        if self.path is None or self._held is not None:
            yield
            return
        self._held = self._open()
        try:
            yield
        finally:
            conn, self._held = self._held, None
            conn.close()

    @contextmanager
    def kept_open(self) -> Iterator[None]:
        """Keep a DuckDB store open over a few sessions of this thread, as `held` does, for a thread other than
        the one that may hold the store (the runner's recording thread): it keeps a connection of its own and
        leaves `held`'s alone. PostgreSQL: nothing to do."""
        if self.path is None:
            yield
            return
        conn = self._open()
        try:
            yield
        finally:
            conn.close()

    @contextmanager
    def connect(self) -> Iterator["object"]:
        """A SQLAlchemy connection in a transaction, retried for a bounded time while the file is locked."""
        import duckdb
        from sqlalchemy.exc import DBAPIError

        conn = self._open()
        try:
            with conn.begin():
                if self._schema_pending:
                    _upgrade(self, conn)
                yield conn
            self._schema_pending = False  # committed with the schema
        except (DBAPIError, duckdb.Error) as exc:
            # Known trouble with the medium becomes a StoreError; a bad statement is a bug and stays as it is.
            orig = exc.orig if isinstance(exc, DBAPIError) else exc
            if isinstance(orig, (duckdb.IOException, duckdb.OutOfMemoryException)) or \
                    (isinstance(exc, DBAPIError) and exc.connection_invalidated):
                raise StoreError(f"the store {self.name} could not be read or written: {orig}",
                                 hint="check the disk or server it lives on; the transaction was rolled back") from exc
            raise
        finally:
            conn.close()

    @contextmanager
    def session(self) -> Iterator["object"]:
        """A SQLModel session bound to one connection; commits on success, rolls back on error."""
        from sqlmodel import Session

        with self.connect() as conn:
            with Session(bind=conn) as session:
                yield session
                session.flush()

    def revision(self) -> str | None:
        return current_revision(self)

    def dispose(self) -> None:
        conn, self._held = self._held, None
        if conn is not None:
            conn.close()
        self.engine.dispose()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.dispose()


def _alembic_config(store: Store):
    return _alembic_config_for_url(store.url)


_REVISION_LINE = re.compile(r"^(revision|down_revision)\b[^=]*=\s*(?:'([^']*)'|\"([^\"]*)\"|None)\s*$", re.M)


def _migrations() -> dict[str, str | None]:
    """revision -> down_revision of every migration this wb ships, read from the migration files' lines."""
    revisions: dict[str, str | None] = {}
    for path in sorted((MIGRATIONS_DIR / "versions").glob("*.py")):
        found = {m.group(1): m.group(2) or m.group(3) for m in _REVISION_LINE.finditer(path.read_text())}
        if "revision" not in found:
            raise RuntimeError(f"{path}: a migration without a revision line")
        revisions[found["revision"]] = found.get("down_revision")
    return revisions


@functools.lru_cache(maxsize=1)
def head_revision() -> str:
    """The newest migration's revision, read from the migration files' `revision` / `down_revision`
    lines. Every command that opens a store checks it; alembic's own script loader would import
    alembic and execute every migration module for it (about a third of a short command's time).
    tests/store/test_store.py holds this to alembic's answer."""
    revisions = _migrations()
    heads = set(revisions) - set(revisions.values())
    if len(heads) > 1:
        raise RuntimeError(f"the migrations have {len(heads)} heads: {sorted(heads)}")
    return heads.pop() if heads else "base"


def _alembic_config_for_url(url: str):
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", url)
    return cfg


def _revision(conn) -> str | None:
    from sqlalchemy import inspect, text

    if not inspect(conn).has_table("alembic_version"):
        return None
    row = conn.execute(text("SELECT version_num FROM alembic_version")).first()
    return row[0] if row else None


def current_revision(store: Store) -> str | None:
    """The store's alembic revision; None for a store without one (empty or not wb's)."""
    with store.connect() as conn:
        return _revision(conn)


def newer_revision(rev: str | None) -> bool:
    """Whether `rev` is a revision none of this wb's migrations makes (a newer wb wrote the store)."""
    return rev is not None and rev not in _migrations()


def _newer(store: Store, rev: str) -> StoreOutdated:
    """A revision none of this wb's migrations makes: a newer wb wrote the store, and no upgrade takes it back."""
    return StoreOutdated(f"the store {store.name} ({store.named_by}) is at revision {rev}, which this wb does not know "
                         f"(its newest is {head_revision()}): a newer wb wrote it", where=store.source,
                         hint="use a wb at least as new as the one that wrote the store (pip install -U wb)")


def _not_wb(store: Store) -> BadInput:
    return BadInput(f"{store.name} holds tables but no wb revision: it is not a wb store",
                    where=store.source, hint=f"point {store.source} at a wb store or at a new file")


_UPGRADE_LOCK_KEY = 0x77625F75706772  # "wb_upgr": the advisory lock a PostgreSQL store's upgrade holds


def _upgrade(store: Store, conn, target: str = "head") -> tuple[str | None, str]:
    """Bring `store` to `target` (the head revision) in `conn`'s transaction; returns (old revision, new
    revision). A migration that refuses the store raises, and the transaction rolls back."""
    from alembic import command
    from sqlalchemy import inspect, text

    if conn.dialect.name == "postgresql":
        # One upgrade at a time on a server store: a second waits here, in its transaction, and then finds the
        # schema the first made (two at once both created it, and the second failed on a duplicate table).
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _UPGRADE_LOCK_KEY})
    before = _revision(conn)
    if before is None and inspect(conn).get_table_names():
        raise _not_wb(store)
    if newer_revision(before):
        raise _newer(store, before)
    cfg = _alembic_config(store)
    cfg.attributes["connection"] = conn
    cfg.attributes["store_name"] = store.name  # a migration's refusal names the store
    command.upgrade(cfg, target)
    return before, _revision(conn) or "base"


def missing_store(path: Path, source: str, *, default: bool = False, hint: str | None = None) -> BadInput:
    """`no_store` for a read: what records runs, or where the runs may be instead (`hint` replaces that)."""
    usual = ("run a hypothesis, `wb import evidence FILE.csv` or `wb db upgrade` first, or point "
             f"{source} at an existing store")
    return no_store(path, source, default=default, hint=hint or usual)


def no_store(path: Path, source: str, *, hint: str, default: bool = False) -> BadInput:
    """A store file that is not there, for a command that only reads one (nothing is created). `default`: no
    value named it (the workbench's wb.duckdb), so the message names no flag as if it had been given."""
    return BadInput(f"no store at {path} ({_given(source, default)})", where=source, hint=hint)


def _given(source: str, default: bool) -> str:
    """What named the store, as a message says it in brackets: the flag, variable or keyword, or, where none
    did, that it is the workbench's default store."""
    if not default:
        return source
    return "the workbench's default store; " + ("db= names another" if source == KEYWORD else
                                                "--db or $WB_DB names another")


@contextmanager
def empty_store(name: str, *, held: bool = True, source: str = FLAG) -> Iterator[Store]:
    """A store with the schema and no rows, read only, in a temporary folder removed after the block: what a read
    of the workbench's own store sees before anything was recorded, with nothing created where that store goes.
    `name`: the store it stands for, as messages name it."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="wb-empty-store-") as folder:
        path = Path(folder) / DEFAULT_DB
        open_store(str(path), source=source).dispose()
        with open_store(str(path), read_only=True, held=held, source=source) as store:
            store.name = name
            yield store


def _folder_exists(path: Path, source: str) -> None:
    """A new store file goes into a folder that exists: a mistyped folder is an error, not a tree to create
    (a new, empty store somewhere else would take the runs)."""
    if not path.parent.is_dir():
        import shlex

        raise BadInput(f"{naming(source, path)}: no folder {path.parent} for the store", where=source,
                       hint=f"create it first (mkdir -p {shlex.quote(str(path.parent))}), or point {source} "
                            "at a file in an existing folder")


def upgrade(db: str | None = None, source: str = FLAG, *,
            lock_wait_s: float = LOCK_WAIT_S) -> tuple[str, str | None, str]:
    """Bring the store to the head revision; returns (store name, old revision, new revision)."""
    url, path = resolve_url(db, source)
    if path is not None:
        _folder_exists(path, source)
    store = Store(url, path, read_only=False, lock_wait_s=lock_wait_s, source=source, given=db)
    try:
        if store.is_duckdb:
            return (store.name, *_upgrade_by_steps(store))
        with store.connect() as conn:
            return (store.name, *_upgrade(store, conn))
    finally:
        store.dispose()


def _upgrade_by_steps(store: Store) -> tuple[str | None, str]:
    """A DuckDB store, one migration per transaction: DuckDB cannot index a column updated in the same
    transaction ("Cannot create index with outstanding updates"), and 0003 fills the uuids that 0004
    indexes. Each step commits whole or not at all, so a refused step leaves the store at the revision
    before it."""
    following = {down: rev for rev, down in _migrations().items()}
    first: str | None = None
    for step in range(len(following) + 1):
        with store.connect() as conn:
            current = _revision(conn)
            if step == 0:
                first = current
            if current == head_revision() or newer_revision(current):
                return first, _upgrade(store, conn)[1]
            _upgrade(store, conn, following[current])
    raise AssertionError(f"the migrations from {first} do not reach {head_revision()}")


def open_store(db: str | None = None, *, read_only: bool = False, lock_wait_s: float = LOCK_WAIT_S,
               held: bool = False, deferred_schema: bool = False, source: str = FLAG,
               default: bool | None = None) -> Store:
    """Open the store, checking its revision. A missing or empty store is created when writing. With `held`, it
    stays held open (`Store.held`) until it is disposed: the check then reuses the open database too. With
    `deferred_schema`, an empty store's schema is made in the first transaction that uses it, with what that
    transaction writes: a write refused there (a damaged bundle found while merging) leaves the database as it
    was, where a schema made at once would stay (PostgreSQL: a database is not removed like a new file).
    `default`: `db` is the workbench's default store, which no flag named (as a None `db` is)."""
    url, path = resolve_url(db, source)
    if path is not None and not path.exists():
        if read_only:
            raise missing_store(path, source, default=db is None if default is None else default)
        _folder_exists(path, source)
    from sqlalchemy import inspect

    store = Store(url, path, read_only=read_only, lock_wait_s=lock_wait_s, source=source, given=db)
    if default is not None:
        store.named_by = _given(source, default)
    try:
        if held and path is not None:
            store._held = store._open()
        # One connection for the check and, for a new store, its creation: each connection to a DuckDB file
        # costs ~20 ms of CPU, and a new store took ten.
        pending = False
        with store.connect() as conn:
            rev = _revision(conn)
            if rev is None and not inspect(conn).get_table_names():
                if not read_only and deferred_schema:
                    pending, rev = True, head_revision()
                elif not read_only:
                    rev = _upgrade(store, conn)[1]
            elif rev is None:
                raise _not_wb(store)
        store._schema_pending = pending
        head = head_revision()
        if rev != head:
            if newer_revision(rev):
                raise _newer(store, rev)
            shown = path if path is not None else "URL" if url_has_password(url) else url
            # $WB_DB names the store for the upgrade as it did for this command; the API's db= is a --db there.
            db_arg = "" if source == ENV else f" --db {shown}"
            raise StoreOutdated(f"the store {store.name} ({store.named_by}) is at revision {rev or 'none'}, this wb "
                                f"needs {head}", where=source, hint=f"run: wb db upgrade{db_arg}")
    except BaseException:
        store.dispose()
        raise
    return store
