"""The probe that runs inside every Python process of a probed deployment (stdlib only, no wb import).

Configured by the environment (WB_PROBE_TARGETS, WB_PROBE_OUT, WB_PROBE_INTERVAL, WB_PROBE_NAME), it
counts calls to the named code objects as their modules import and writes this process's counts to
one JSON file in WB_PROBE_OUT: every interval, at exit, on SIGTERM and before os._exit.
On Python 3.12+ it counts with sys.monitoring (PY_START of the target's code object); on 3.11 it
replaces the target with a counting wrapper right after its module executes.
"""

from __future__ import annotations

import ast
import atexit
import functools
import json
import os
import signal
import socket
import sys
import threading
import time

FORMAT = 1
ENV_TARGETS = "WB_PROBE_TARGETS"
ENV_OUT = "WB_PROBE_OUT"
ENV_INTERVAL = "WB_PROBE_INTERVAL"
ENV_NAME = "WB_PROBE_NAME"
DEFAULT_INTERVAL = 1.0
FILE_PREFIX = "probe-"

# A target's state in this process. Only "instrumented" counts calls; the others say why not.
INSTRUMENTED = "instrumented"
NOT_IMPORTED = "not_imported"      # its module was never imported here (checked on disk instead)
NO_MODULE = "no_module"            # no such module
NO_ATTRIBUTE = "no_attribute"      # the module has no such attribute
NOT_CALLABLE = "not_callable"      # the attribute is not a function, method or class
IMPORT_FAILED = "import_failed"    # the module raised while importing

_installed = False
_probe: "_Probe | None" = None


def parse_targets(text: str) -> list[tuple[str, str, str]]:
    """`a.b:C.d,a.b:f` -> [(target, module, qualname)]; malformed entries raise ValueError."""
    out = []
    for raw in text.replace("\n", ",").split(","):
        t = raw.strip()
        if not t:
            continue
        module, sep, qual = t.partition(":")
        if not sep or not module or not qual or any(not p.isidentifier() for p in module.split(".") + qual.split(".")):
            raise ValueError(f"probe target {t!r} must look like package.module:Qualified.name")
        out.append((t, module, qual))
    return out


class _Target:
    __slots__ = ("name", "module", "qual", "state", "detail", "resolved", "mechanism")

    def __init__(self, name: str, module: str, qual: str) -> None:
        self.name, self.module, self.qual = name, module, qual
        self.state = NOT_IMPORTED
        self.detail = ""
        self.resolved: bool | None = None  # for NOT_IMPORTED: filled by a look at the source on disk
        self.mechanism = ""


class _Probe:
    def __init__(self, targets: list[tuple[str, str, str]], out_dir: str, interval: float, name: str | None) -> None:
        self.targets = [_Target(*t) for t in targets]
        self.by_module: dict[str, list[int]] = {}
        for i, t in enumerate(self.targets):
            self.by_module.setdefault(t.module, []).append(i)
        self.out_dir = out_dir
        self.interval = interval
        self.name = name
        self.counts = [0] * len(self.targets)
        self.count_lock = threading.Lock()
        self.write_lock = threading.RLock()  # re-entrant: a signal may arrive while this thread writes
        self.instrument_lock = threading.RLock()
        self.wake = threading.Event()
        self.final = False
        self.warned = False
        self.monitoring_tool: int | None = None
        self.code_index: dict[object, tuple[int, ...]] = {}
        self._new_identity()

    # ------------------------------------------------------------------ identity and output

    def _new_identity(self) -> None:
        self.pid = os.getpid()
        self.started_at = time.time()
        self.path = os.path.join(self.out_dir, f"{FILE_PREFIX}{self.pid}-{os.urandom(4).hex()}.json")

    def process_label(self) -> str:
        """What the process runs, without the interpreter: `pkg.module args`, `script.py args` or `-c code`."""
        if self.name:
            return self.name
        argv = list(getattr(sys, "orig_argv", None) or sys.argv or ["python"])
        i = 1
        while i < len(argv) and argv[i].startswith("-") and argv[i] not in ("-m", "-c", "-"):
            i += 2 if argv[i] in ("-X", "-W") else 1  # interpreter options; these two take a value
        if i < len(argv) and argv[i] == "-m" and i + 1 < len(argv):
            parts = argv[i + 1:]
        elif i < len(argv) and not argv[i].startswith("-"):
            parts = [os.path.basename(argv[i])] + argv[i + 1:]
        else:
            parts = [os.path.basename(argv[0])] + argv[i:]
        return " ".join(" ".join(parts).split())[:200]

    def snapshot(self, final: bool) -> dict:
        # Stamped with the time it starts reading, not the time it ends: a reader that waits for counts written
        # after a moment must not take one that read them before it (a flush slowed down by a loaded machine).
        as_of = time.time()
        for name in [t.module for t in self.targets if t.state == NOT_IMPORTED and t.module in sys.modules]:
            mod = sys.modules[name]
            if not getattr(getattr(mod, "__spec__", None), "_initializing", False):
                self.module_loaded(name, mod)  # imported by a route that bypassed the import hook
        counts = list(self.counts)  # one atomic copy under the GIL; the counting lock is not needed to read
        targets = {}
        for i, t in enumerate(self.targets):
            if t.state == NOT_IMPORTED and t.resolved is None:
                look = _look_on_disk(t.module, t.qual)  # slow: the module may be imported meanwhile
                with self.instrument_lock:  # ... and then the import's state and detail stand, not this look
                    if t.state == NOT_IMPORTED:
                        t.resolved, t.detail = look
            resolved = True if t.state == INSTRUMENTED else (bool(t.resolved) if t.state == NOT_IMPORTED else False)
            targets[t.name] = {"calls": counts[i], "state": t.state, "resolved": resolved, "detail": t.detail,
                               "mechanism": t.mechanism}
        return {"format": FORMAT, "pid": self.pid, "process": self.process_label(),
                "argv": list(getattr(sys, "orig_argv", None) or sys.argv), "host": socket.gethostname(),
                "python": sys.version.split()[0], "started_at": self.started_at, "written_at": as_of,
                "final": final, "targets": targets}

    def write(self, final: bool = False) -> None:
        with self.write_lock:
            if self.final:
                return
            try:
                doc = self.snapshot(final)
                tmp = f"{self.path}.{threading.get_ident()}.tmp"
                with open(tmp, "w", encoding="utf-8") as fh:
                    json.dump(doc, fh)
                os.replace(tmp, self.path)  # atomic: a reader sees the old file or the new one
                if final:
                    self.final = True
            except Exception as exc:  # the host process must never die of its probe
                if not self.warned:
                    self.warned = True
                    _warn(f"cannot write {self.path}: {exc}")

    def flusher(self) -> None:
        while not self.final:
            self.write()  # first at start, so a live process is visible before its first interval ends
            self.wake.wait(self.interval)
            self.wake.clear()

    def start_flusher(self) -> None:
        threading.Thread(target=self.flusher, name="wb-probe-flush", daemon=True).start()

    def after_fork_in_child(self) -> None:
        # The child is a new process: its own counts, file and flusher thread.
        self.counts = [0] * len(self.targets)
        self.count_lock = threading.Lock()  # locks held by other threads at fork() would never be released
        self.write_lock = threading.RLock()
        self.instrument_lock = threading.RLock()
        self.wake = threading.Event()
        self.final = False
        self._new_identity()
        self.start_flusher()

    # ------------------------------------------------------------------ instrumentation

    def count(self, i: int) -> None:
        with self.count_lock:
            self.counts[i] += 1

    def module_loaded(self, module_name: str, module: object) -> None:
        with self.instrument_lock:  # the import hook and the flusher's late check may both get here
            for i in self.by_module.get(module_name, ()):
                t = self.targets[i]
                if t.state == INSTRUMENTED:
                    continue
                try:
                    self._instrument(i, t, module)
                except Exception as exc:
                    t.state, t.detail = NOT_CALLABLE, f"could not instrument: {exc!r}"

    def module_failed(self, module_name: str, exc: BaseException) -> None:
        for i in self.by_module.get(module_name, ()):
            t = self.targets[i]
            if t.state == NOT_IMPORTED:
                t.state, t.detail, t.resolved = IMPORT_FAILED, f"importing {module_name} raised {exc!r}", False

    def _instrument(self, i: int, t: _Target, module: object) -> None:
        owner: object = module
        parts = t.qual.split(".")
        for part in parts[:-1]:
            if not hasattr(owner, part):
                t.state, t.detail = NO_ATTRIBUTE, f"module {t.module} has no attribute {t.qual!r}"
                return
            owner = getattr(owner, part)
        last = parts[-1]
        raw = _own_attr(owner, last)
        if raw is _MISSING:
            t.state, t.detail = NO_ATTRIBUTE, f"module {t.module} has no attribute {t.qual!r}"
            return
        if isinstance(raw, type):
            self._instrument_class(i, t, raw)
            return
        if isinstance(raw, (staticmethod, classmethod)):
            fn = raw.__func__
            if not self._monitor(i, t, fn):
                setattr(owner, last, type(raw)(self._wrap(i, fn)))
                t.mechanism = "wrapper"
        elif isinstance(raw, property) and raw.fget is not None:
            if not self._monitor(i, t, raw.fget):
                setattr(owner, last, raw.getter(self._wrap(i, raw.fget)))
                t.mechanism = "wrapper"
        elif callable(raw):
            if not self._monitor(i, t, raw):
                setattr(owner, last, self._wrap(i, raw))
                t.mechanism = "wrapper"
        else:
            t.state, t.detail = NOT_CALLABLE, f"{t.name} is a {type(raw).__name__}, not code"
            return
        t.state, t.resolved, t.detail = INSTRUMENTED, True, ""

    def _instrument_class(self, i: int, t: _Target, cls: type) -> None:
        """A class means its constructor: count each run of its own __init__ (subclasses' super() calls included)."""
        own = cls.__dict__.get("__init__")
        if own is not None and self._monitor(i, t, own):
            t.state, t.resolved, t.detail = INSTRUMENTED, True, ""
            return
        if own is not None:
            cls.__init__ = self._wrap(i, own)  # type: ignore[misc]
            t.mechanism = "wrapper"
        else:
            cls.__init__ = self._counting_init(i, cls)  # type: ignore[misc]
            t.mechanism = "wrapper"
        t.state, t.resolved, t.detail = INSTRUMENTED, True, ""

    def _counting_init(self, i: int, cls: type):
        count = self.count

        def __init__(self_, *args, **kwargs):
            count(i)
            mro = type(self_).__mro__
            base = next(k for k in mro[mro.index(cls) + 1:] if "__init__" in k.__dict__)
            if base is object:
                # object.__init__ rejects arguments once a class defines __init__; keep the error
                # object.__new__ would have raised without the probe.
                if (args or kwargs) and type(self_).__new__ is object.__new__:
                    raise TypeError(f"{type(self_).__name__}() takes no arguments")
                return object.__init__(self_)
            return super(cls, self_).__init__(*args, **kwargs)

        __init__.__qualname__ = f"{cls.__qualname__}.__init__"
        return __init__

    def _wrap(self, i: int, fn):
        count = self.count

        @functools.wraps(fn)
        def counted(*args, **kwargs):
            count(i)
            return fn(*args, **kwargs)

        counted.__wb_probe_wrapped__ = fn  # type: ignore[attr-defined]
        return counted

    def _monitor(self, i: int, t: _Target, fn: object) -> bool:
        """Count with sys.monitoring when the interpreter has it and `fn` is Python code."""
        mon = getattr(sys, "monitoring", None)
        code = getattr(fn, "__code__", None)
        if mon is None or code is None or self.monitoring_tool is None:
            return False
        self.code_index[code] = self.code_index.get(code, ()) + (i,)
        mon.set_local_events(self.monitoring_tool, code, mon.events.PY_START)
        t.mechanism = "sys.monitoring"
        return True

    def enable_monitoring(self) -> None:
        mon = getattr(sys, "monitoring", None)
        if mon is None or os.environ.get("WB_PROBE_MECHANISM") == "wrapper":
            return
        for tool in (4, 3, 5, 2):  # 3 and 4 have no assigned role; take the first free one
            if mon.get_tool(tool) is None:
                mon.use_tool_id(tool, "wb-probe")
                break
        else:
            return
        index, count = self.code_index, self.count

        def on_start(code, offset):
            for i in index.get(code, ()):
                count(i)

        mon.register_callback(tool, mon.events.PY_START, on_start)
        self.monitoring_tool = tool


_MISSING = object()


def _own_attr(owner: object, name: str) -> object:
    """The attribute as stored (staticmethod, classmethod, property kept as such); inherited ones as found."""
    if isinstance(owner, type):
        for klass in owner.__mro__:
            if name in klass.__dict__:
                return klass.__dict__[name]
        return _MISSING
    return getattr(owner, name, _MISSING)


def _find_spec_only(name: str, path: list[str] | None):
    """Ask the finders where `name` is, as import would, without executing it.

    A submodule is looked for in its parent's locations first: some meta-path finders (editable
    installs) expect the parent to be imported and fail otherwise.
    """
    from importlib.machinery import PathFinder

    if path is not None:
        try:
            spec = PathFinder.find_spec(name, path)
        except KeyError:  # a namespace package wants its parent imported: look at the folders instead
            spec = _namespace_spec(name, path)
        if spec is not None:
            return spec
    for finder in sys.meta_path:
        if isinstance(finder, _Finder) or not hasattr(finder, "find_spec"):
            continue
        try:
            spec = finder.find_spec(name, path, None)
        except Exception:
            continue
        if spec is not None:
            return spec
    return None


def _namespace_spec(name: str, path: list[str]):
    from importlib.machinery import ModuleSpec

    last = name.rpartition(".")[2]
    dirs = [os.path.join(p, last) for p in path if os.path.isdir(os.path.join(p, last))]
    if not dirs:
        return None
    spec = ModuleSpec(name, None, is_package=True)
    spec.submodule_search_locations = dirs
    return spec


def _look_on_disk(module: str, qual: str) -> tuple[bool, str]:
    """Whether `module:qual` exists, without importing anything: find the source and read its definitions."""
    parts = module.split(".")
    spec = None
    search: list[str] | None = None
    for n in range(1, len(parts) + 1):
        name = ".".join(parts[:n])
        loaded = sys.modules.get(name)
        if loaded is not None and n < len(parts):
            if getattr(loaded, "__path__", None) is None:
                return False, f"{name} is not a package, so {module} does not exist"
            search = list(loaded.__path__)
            continue
        try:
            spec = _find_spec_only(name, search)
        except Exception as exc:
            return False, f"cannot look for module {name}: {exc!r}"
        if spec is None:
            return False, f"no module named {name!r}"
        if n < len(parts) and spec.submodule_search_locations is None:
            return False, f"{name} is not a package, so {module} does not exist"
        search = list(spec.submodule_search_locations or [])
    origin = getattr(spec, "origin", None)
    if not origin or not str(origin).endswith(".py"):
        return True, f"module {module} exists but was never imported here (not source: attribute unchecked)"
    try:
        with open(origin, "rb") as fh:
            tree = ast.parse(fh.read(), filename=origin)
    except Exception as exc:
        return False, f"cannot read {origin}: {exc!r}"
    if _defines(tree.body, qual.split(".")):
        return True, f"module {module} was never imported here; {qual} is defined in {origin}"
    return False, f"{origin} defines no {qual!r} (module never imported here)"


def _defines(body: list, path: list[str]) -> bool:
    head, rest = path[0], path[1:]
    for node in body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == head:
            if not rest:
                return True
            if isinstance(node, ast.ClassDef) and _defines(node.body, rest):
                return True
        elif not rest and isinstance(node, (ast.Assign, ast.AnnAssign, ast.ImportFrom, ast.Import)):
            names = []
            if isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names = [node.target.id]
            else:
                names = [(a.asname or a.name).split(".")[0] for a in node.names]
            if head in names:
                return True
        elif isinstance(node, (ast.If, ast.Try)):  # definitions under `if TYPE_CHECKING`/try-import fallbacks
            blocks = [node.body, node.orelse] + ([node.finalbody] + [h.body for h in node.handlers]
                                                 if isinstance(node, ast.Try) else [])
            if any(_defines(b, path) for b in blocks):
                return True
    return False


# ---------------------------------------------------------------------- import hook


class _Finder:
    """A meta-path finder that lets the real finders find target modules, then hooks their execution."""

    def __init__(self, probe: _Probe) -> None:
        self.probe = probe
        self.busy = threading.local()

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.probe.by_module or getattr(self.busy, "on", False):
            return None
        self.busy.on = True
        try:
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
            else:
                return None
        finally:
            self.busy.on = False
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _Loader(spec.loader, self.probe)
        return spec

    def invalidate_caches(self):
        pass


class _Loader:
    """Delegates to the real loader; after the module body runs, instruments its targets."""

    def __init__(self, inner, probe: _Probe) -> None:
        self._inner = inner
        self._probe = probe

    def create_module(self, spec):
        return self._inner.create_module(spec)

    def exec_module(self, module):
        spec = getattr(module, "__spec__", None)
        if spec is not None:
            spec.loader = self._inner  # the module keeps its real loader (reload, resources, pickling)
        try:
            module.__loader__ = self._inner
        except Exception:
            pass
        try:
            self._inner.exec_module(module)
        except BaseException as exc:
            self._probe.module_failed(module.__name__, exc)
            raise
        self._probe.module_loaded(module.__name__, module)

    def __getattr__(self, name):
        return getattr(self._inner, name)


# ---------------------------------------------------------------------- exits and signals


def _warn(msg: str) -> None:
    try:
        sys.stderr.write(f"wb-probe: {msg}\n")
    except Exception:
        pass


def _hook_exits(probe: _Probe) -> None:
    atexit.register(probe.write, True)

    real_exit = os._exit

    def _exit(code):  # forked workers (multiprocessing) leave through os._exit, skipping atexit
        probe.write(True)
        real_exit(code)

    os._exit = _exit
    os.register_at_fork(after_in_child=probe.after_fork_in_child)

    real_signal = signal.signal

    def flushing(handler):
        def on_term(signum, frame):
            probe.write(handler is signal.SIG_DFL)
            if handler is signal.SIG_DFL:
                real_signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)  # die of the signal, as without the probe
                return
            return handler(signum, frame)

        on_term.__wb_probe_inner__ = handler  # type: ignore[attr-defined]
        return on_term

    def patched_signal(signum, handler):
        # A handler the application installs for SIGTERM still flushes first.
        if signum == signal.SIGTERM and (callable(handler) or handler is signal.SIG_DFL):
            previous = real_signal(signum, flushing(handler))
        else:
            previous = real_signal(signum, handler)
        return getattr(previous, "__wb_probe_inner__", previous)

    real_getsignal = signal.getsignal

    def patched_getsignal(signum):
        current = real_getsignal(signum)
        return getattr(current, "__wb_probe_inner__", current)

    if threading.current_thread() is threading.main_thread():
        try:
            current = real_getsignal(signal.SIGTERM)
            if current is signal.SIG_DFL or callable(current):
                real_signal(signal.SIGTERM, flushing(current))
            signal.signal = patched_signal
            signal.getsignal = patched_getsignal
        except (ValueError, OSError) as exc:
            _warn(f"cannot watch SIGTERM: {exc}")


# ---------------------------------------------------------------------- entry point


def install_from_env(environ=None) -> "_Probe | None":
    """Install once per process when WB_PROBE_TARGETS and WB_PROBE_OUT are set; a no-op otherwise."""
    global _installed, _probe
    env = os.environ if environ is None else environ
    if _installed:
        return _probe
    spec, out = env.get(ENV_TARGETS, ""), env.get(ENV_OUT, "")
    if not spec.strip() or not out:
        return None
    _installed = True
    try:
        targets = parse_targets(spec)
        interval = float(env.get(ENV_INTERVAL) or DEFAULT_INTERVAL)
        os.makedirs(out, exist_ok=True)
    except (ValueError, OSError) as exc:
        _warn(f"probe disabled: {exc}")
        return None
    probe = _Probe(targets, out, max(interval, 0.05), env.get(ENV_NAME) or None)
    probe.enable_monitoring()
    sys.meta_path.insert(0, _Finder(probe))
    for name in list(probe.by_module):  # modules imported before the probe (rare: sitecustomize runs early)
        mod = sys.modules.get(name)
        if mod is not None:
            probe.module_loaded(name, mod)
    _hook_exits(probe)
    probe.start_flusher()
    _probe = probe
    return probe


def current() -> "_Probe | None":
    return _probe
