"""vfcheck's startup hook for the Python processes below a check worker (tool servers):
on `PYTHONPATH` only while vfcheck checks an env (`vfcheck._host.child_sockets`).

Standard library only, and silent: a process that cannot import vfcheck (a harness
program's own environment) starts as it would have. Then it runs the `sitecustomize` this
one hides, if the interpreter has one further along `sys.path`.
"""

import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))

if os.environ.get("VFCHECK_CHILD_SOCKETS"):
    try:
        from vfcheck._host.child_sockets import guard_this_process
    except Exception:  # noqa: BLE001 - never break the process vfcheck only watches
        pass
    else:
        try:
            guard_this_process()
        except Exception:  # noqa: BLE001
            pass

_rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
_spec = importlib.machinery.PathFinder.find_spec("sitecustomize", _rest)
if _spec is not None and _spec.loader is not None:
    _hidden = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_hidden)
