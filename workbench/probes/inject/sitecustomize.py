"""wb reachability probe: counts calls to the code named in WB_PROBE_TARGETS, then runs the sitecustomize it shadows.

Python imports the first `sitecustomize` on sys.path at start-up; this directory is put first on
PYTHONPATH, so the deployment's own sitecustomize (if any) would be hidden: it is found further
along sys.path and executed here, under the name `_wb_chained_sitecustomize`.
"""

import os as _os
import sys as _sys


def _wb_start() -> None:
    try:
        import _wb_probe

        _wb_probe.install_from_env()
    except Exception as exc:  # never break the host process
        _sys.stderr.write(f"wb-probe: not started: {exc!r}\n")


def _wb_chain() -> None:
    import importlib.util
    from importlib.machinery import PathFinder

    here = _os.path.dirname(_os.path.abspath(__file__))

    def _other(entry: str) -> bool:
        try:
            return _os.path.abspath(entry or _os.getcwd()) != here and not _os.path.isfile(
                _os.path.join(entry or _os.getcwd(), "_wb_probe.py"))
        except OSError:
            return True

    spec = PathFinder.find_spec("sitecustomize", [p for p in _sys.path if _other(p)])
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    _sys.modules["_wb_chained_sitecustomize"] = module
    spec.loader.exec_module(module)


if _os.environ.get("WB_PROBE_TARGETS"):
    _wb_start()
_wb_chain()
