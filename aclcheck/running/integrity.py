"""In-process runs (`--no-isolate`): is aclcheck still itself after a kernel ran in it?

A kernel that runs in aclcheck's own process can change anything there; this cannot
stop a determined one (docs/verify.md, threat model: gate with isolation). It catches
the plain ways of faking a pass or losing the reports: replacing aclcheck's functions
(the judge, the comparison, the gate, the report writers), their code or its tables,
the interpreter's exits and builtins, numpy's functions, those modules themselves;
changing the working directory or the umask. After each in-process call
`IntegrityGuard.check` compares with the snapshot taken before the first one, puts it
all back, and names what changed (the call is then ERROR).

Exit handlers registered during a call cannot be taken back (and libraries register
some on first use): they mark the process `compromised`, and the CLI then ends without
running exit handlers, so none can replace its exit status.
"""

from __future__ import annotations

import atexit
import os
import sys
import types
from operator import attrgetter, getitem, is_not
from typing import Any

#: modules besides aclcheck's own whose functions the verdicts and reports depend on
WATCHED = ("builtins", "sys", "os", "os.path", "json", "math", "atexit", "shutil",
           "tempfile", "numpy", "ml_dtypes", "h5py", "jinja2", "rich", "click")

#: what this process can no longer vouch for (see the module docstring)
compromised: list[str] = []

def _umask() -> int | None:
    """The process umask without changing it (Linux /proc), else None."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return None


def _ours(name: str) -> bool:
    return name == "aclcheck" or name.startswith("aclcheck.")


def _constant(name: str) -> bool:
    """A public table (STANDARDS_BY_NAME, FAILING...), not a private cache (_LOADED)."""
    return name.isupper() and not name.startswith("_")


class _Space:
    """One namespace (a module's or a class's) and the entries it had: compared whole at
    C speed (map/operator), entry by entry only when something differs."""

    def __init__(self, where: str, mapping: Any, entries: list[tuple[str, Any]],
                 owner: type | None = None) -> None:
        self.where, self.mapping, self.owner = where, mapping, owner
        self.keys = tuple(k for k, _ in entries)
        self.values = tuple(v for _, v in entries)

    def changed(self) -> list[str]:
        get = self.mapping.get
        now = list(map(get, self.keys))  # (a removed entry that was None goes unseen)
        if not any(map(is_not, now, self.values)):
            return []
        names = []
        for key, was, value in zip(self.keys, now, self.values, strict=True):
            if was is not value:
                if self.owner is not None:
                    type.__setattr__(self.owner, key, value)
                else:
                    self.mapping[key] = value
                names.append(f"{self.where}.{key}")
        return names


class IntegrityGuard:
    """A snapshot of what an in-process kernel must leave alone; `check` after a call."""

    def __init__(self) -> None:
        self._spaces: list[_Space] = []
        functions: list[types.FunctionType] = []
        self._tables: list[tuple[str, Any, Any]] = []
        modules = [(n, m) for n, m in list(sys.modules.items())
                   if isinstance(m, types.ModuleType) and (_ours(n) or n in WATCHED)]
        for name, module in modules:
            ours = _ours(name)
            entries = [(k, v) for k, v in list(vars(module).items())
                       if ours or (callable(v) and not k.endswith("hook"))]
            # (not sys.*hook: test runners swap them for every test)
            self._spaces.append(_Space(name, vars(module), entries))
            for key, value in entries:
                if isinstance(value, types.FunctionType):
                    functions.append(value)
                elif ours and isinstance(value, type) and _ours(value.__module__):
                    members = [(k, m) for k, m in vars(value).items()  # not __doc__ & co.
                               if not (k.startswith("__") and isinstance(m, str | tuple))]
                    self._spaces.append(_Space(f"{value.__module__}.{value.__qualname__}",
                                               vars(value), members, owner=value))
                    functions += [m for _, m in members if isinstance(m, types.FunctionType)]
                elif ours and _constant(key) and isinstance(value, dict | list | set):
                    self._tables.append((f"{name}.{key}", value, _copy(value)))
        self._flat = (tuple(sp.mapping for sp in self._spaces for _ in sp.keys),
                      tuple(k for sp in self._spaces for k in sp.keys),
                      tuple(v for sp in self._spaces for v in sp.values))
        self._functions = tuple(functions)
        self._parts = _parts(self._functions)
        self._modules = dict(modules)
        self._cwd = os.getcwd()
        self._umask = _umask()
        self._exit_handlers = exit_handlers()

    def check(self) -> tuple[str, ...]:
        """What changed since the snapshot (put back where possible), by name."""
        changed: list[str] = []
        maps, keys, values = self._flat
        try:  # the usual case, nothing changed: one pass at C speed
            same = not any(map(is_not, map(getitem, maps, keys), values))
        except KeyError:  # an entry was removed
            same = False
        if not same:
            for space in self._spaces:
                changed += space.changed()
        now = _parts(self._functions)
        if any(any(map(is_not, a, b)) for a, b in zip(now, self._parts, strict=True)):
            for k, fn in enumerate(self._functions):
                parts = tuple(p[k] for p in self._parts)
                if any(map(is_not, (p[k] for p in now), parts)):
                    fn.__code__, fn.__defaults__, fn.__kwdefaults__ = parts
                    changed.append(f"{fn.__module__}.{fn.__qualname__} (its code)")
        for where, table, copy in self._tables:
            if not _same(table, copy):
                _restore(table, copy)
                changed.append(f"{where} (its entries)")
        for name, module in self._modules.items():
            if sys.modules.get(name) is not module:
                sys.modules[name] = module
                changed.append(f"sys.modules[{name!r}]")
        changed += self._process_state()
        return tuple(changed)

    def _process_state(self) -> list[str]:
        changed = []
        try:
            cwd = os.getcwd()
        except OSError:
            cwd = None
        if cwd != self._cwd:
            try:
                os.chdir(self._cwd)
            except OSError:
                compromised.append("the working directory")
            changed.append("the working directory")
        umask = _umask()
        if umask is not None and umask != self._umask and self._umask is not None:
            os.umask(self._umask)
            changed.append("the umask")
        handlers = exit_handlers()
        if handlers is not None and self._exit_handlers is not None \
                and handlers > self._exit_handlers:
            compromised.append("exit handlers registered during a call")  # not ERROR:
            self._exit_handlers = handlers  # libraries register some on first use
        return changed


_PARTS = (attrgetter("__code__"), attrgetter("__defaults__"), attrgetter("__kwdefaults__"))


def _parts(functions: tuple[types.FunctionType, ...]) -> tuple[tuple[Any, ...], ...]:
    """Every function's code, defaults and keyword defaults (three parallel tuples)."""
    return tuple(tuple(map(get, functions)) for get in _PARTS)


_MISSING = object()


def _copy(table: Any) -> Any:
    if isinstance(table, dict):
        return list(table.items())
    return list(table)


def _same(table: Any, copy: list[Any]) -> bool:
    now = _copy(table)
    if len(now) != len(copy):
        return False
    if isinstance(table, dict):
        return all(k1 == k2 and v1 is v2 for (k1, v1), (k2, v2) in zip(now, copy, strict=True))
    if isinstance(table, set):
        return table == set(copy)
    return all(a is b for a, b in zip(now, copy, strict=True))


def _restore(table: Any, copy: list[Any]) -> None:
    table.clear()
    if isinstance(table, dict):
        table.update(copy)
    elif isinstance(table, set):
        table.update(copy)
    else:
        table.extend(copy)


def exit_handlers() -> int | None:
    """How many exit handlers are registered (None where the interpreter does not say)."""
    count = getattr(atexit, "_ncallbacks", None)
    return count() if callable(count) else None
