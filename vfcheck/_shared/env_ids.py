"""Env ids before any load: where an id's module is and which ids a folder holds, found
the way verifiers' loader will look (`verifiers/v1/utils/loaders.py`, `_import_plugin`:
the id's last `/` segment, `@version` cut, dashes as underscores, lowercased; the
`verifiers.v1.tasksets` package first, then a top-level module), without importing
verifiers or the env. A typo in an env id is then a usage error in a second, with "did you
mean", instead of a `load` failure after the worker imported verifiers.
"""

from __future__ import annotations

import difflib
import importlib.machinery
import importlib.util
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from vfcheck._shared.paths import shown_path


def module_name(env_id: str) -> str:
    """The module verifiers imports for `env_id`."""
    return env_id.rsplit("/", 1)[-1].split("@", 1)[0].replace("-", "_").lower()


def env_module_file(env_id: str, paths: Sequence[str] = ()) -> Path | None:
    """The file of `env_id`'s module (`__init__.py` for a package) in `paths`, the working
    directory (a check worker is started in it) or `sys.path`; None when no finder knows
    it. Nothing is imported: a top-level name's spec needs no parent package."""
    name = module_name(env_id)
    if not name.isidentifier():
        return None
    builtin = _builtin_tasksets()
    if builtin is not None and ((builtin / name).is_dir() or (builtin / f"{name}.py").is_file()):
        return builtin / name
    search = [*(str(Path(p).resolve()) for p in paths), str(Path.cwd())]
    spec = importlib.machinery.PathFinder.find_spec(name, search)
    if spec is None:
        try:  # sys.path and the meta path finders too (setuptools' editable installs)
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
    if spec is None:
        return None
    origin = spec.origin if spec.origin not in (None, "namespace", "built-in", "frozen") \
        else next(iter(spec.submodule_search_locations or []), None)
    return Path(origin) if origin else Path(name)


HINT_BYTES = 2 * 2**20
"""How much of an env's source `mentions` reads at most (a package's modules together)."""


def mentions(env_id: str, paths: Sequence[str], word: str) -> bool:
    """Whether `word` (any case) is in the source of `env_id`'s module, or of its package's
    modules: a hint before the load for what only the load can tell (its toolsets), never
    a verdict."""
    found = env_module_file(env_id, paths)
    if found is None:
        return False
    root = found.parent if found.name == "__init__.py" else found
    if not root.exists() and root.with_suffix(".py").is_file():  # a built-in taskset module
        root = root.with_suffix(".py")
    files = sorted(root.rglob("*.py")) if root.is_dir() else [root]
    left, word = HINT_BYTES, word.lower()
    for file in files:
        try:
            text = file.read_bytes()[:left]
        except OSError:
            continue
        if word in text.decode("utf-8", "replace").lower():
            return True
        if (left := left - len(text)) <= 0:
            break
    return False


def _builtin_tasksets() -> Path | None:
    """verifiers' own tasksets folder, found without importing verifiers."""
    spec = importlib.machinery.PathFinder.find_spec("verifiers", sys.path)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "v1" / "tasksets"


def ids_in(folders: Iterable[str]) -> list[str]:
    """The env ids the modules of `folders` would be: `my_env.py` and `my_env/` (a package)
    as `my-env`."""
    ids: list[str] = []
    for folder in folders:
        base = Path(folder)
        if not base.is_dir():
            continue
        for entry in sorted(base.iterdir()):
            stem = entry.stem if entry.suffix == ".py" else entry.name
            if not stem.isidentifier() or stem.startswith("_"):
                continue
            if (entry.suffix == ".py" and entry.is_file()) or (
                    entry.is_dir() and (entry / "__init__.py").is_file()):
                ids.append(stem.replace("_", "-"))
    return list(dict.fromkeys(ids))


def unknown_env(env_id: str, paths: Sequence[str], known: Sequence[str]) -> str | None:
    """Why `env_id` names no module, with "did you mean" from `known` (`[tool.vfcheck] envs`)
    and the ids under `paths`; None when a module is there to load."""
    if not module_name(env_id).isidentifier():
        return None  # a file path for an id: the load says how to write it (`id_hint`)
    if env_module_file(env_id, paths) is not None:
        return None
    candidates = list(dict.fromkeys([*known, *ids_in(paths)]))
    close = difflib.get_close_matches(env_id, candidates, n=1, cutoff=0.6)
    where = ", ".join(shown_path(Path(p)) for p in paths) or "the working directory and sys.path"
    hint = (f"; did you mean {close[0]!r}?" if close else
            f"; envs there: {', '.join(candidates[:8])}" if candidates else "")
    return (f"env {env_id!r}: no module {module_name(env_id)!r} in {where} (an env id is its "
            f"module's name with dashes){hint}")
