"""Adapter names -> adapters: built-ins (reference, torch, aclnn, mindspore, paddle),
`module:function`, and third-party plugins from the entry-point group
`aclcheck.implementations`."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aclcheck.errors import ImplementationUnavailable, UnknownImplementation
from aclcheck.impls.base import Implementation

ENTRY_POINT_GROUP = "aclcheck.implementations"
BUILTIN = ("reference", "torch", "torch:cpu", "torch:cuda", "torch:npu", "aclnn",
           "mindspore", "mindspore:cpu", "mindspore:gpu", "mindspore:ascend",
           "paddle", "paddle:cpu", "paddle:gpu", "paddle:npu")


@dataclass(frozen=True)
class ImplInfo:
    name: str
    available: bool
    description: str
    note: str


def _plugins() -> dict[str, object]:
    from importlib.metadata import entry_points  # ~10 ms: only where a spec is no built-in

    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


#: the frameworks whose adapters are built in (a device suffix follows their name):
#: module and class, imported when asked (importing one imports no framework)
_FRAMEWORKS = {
    "torch": ("aclcheck.impls.torch_impl", "TorchImpl"),
    "mindspore": ("aclcheck.impls.mindspore_impl", "MindSporeImpl"),
    "paddle": ("aclcheck.impls.paddle_impl", "PaddleImpl"),
}


def _framework_adapter(framework: str) -> type[Implementation]:
    module, name = _FRAMEWORKS[framework]
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def spec_kind(spec: str) -> str:
    """What a spec names, known without importing anything: "builtin" (aclcheck's own
    adapters), "plugin" (an entry point), "callable" (module:function: user code), or
    UnknownImplementation."""
    if spec in BUILTIN or spec.partition(":")[0] in _FRAMEWORKS:
        return "builtin"
    if spec in _plugins():
        return "plugin"
    if ":" in spec:
        return "callable"
    valid = list(BUILTIN) + sorted(_plugins()) + ["module:function", "--results FILE"]
    raise UnknownImplementation(f"unknown implementation {spec!r}; available: "
                                f"{', '.join(valid)}")


def static_fork_safe(spec: str) -> bool | None:
    """Whether `spec`'s adapter is fork-safe, known without building it (None: only
    the adapter can say: plugins)."""
    kind = spec_kind(spec)
    if kind == "callable":
        return True
    if kind == "plugin":
        return None
    framework, _, device = spec.partition(":")
    if framework in _FRAMEWORKS:  # the adapter class declares it (default device: cpu)
        return (device or "cpu") in _framework_adapter(framework).FORK_SAFE_DEVICES
    return spec == "reference"  # aclnn: a device runtime


def create(spec: str) -> Implementation:
    """Build the adapter named by spec (see `aclcheck impls`): UnknownImplementation when
    it names nothing, ImplementationUnavailable (naming the spec) when it cannot run here."""
    try:
        return _build(spec)
    except ImplementationUnavailable as exc:
        exc.spec = exc.spec or spec
        raise


def _build(spec: str) -> Implementation:
    if spec == "reference":
        from aclcheck.impls.reference import ReferenceImpl

        return ReferenceImpl()
    if spec == "aclnn":
        from aclcheck.impls.aclnn_impl import from_environment

        return from_environment()
    framework, _, device = spec.partition(":")
    if framework in _FRAMEWORKS:  # raises ImplementationUnavailable / UnknownImplementation
        return _framework_adapter(framework)(device or "cpu")
    plugins = _plugins()
    if spec in plugins:
        factory = plugins[spec].load()  # type: ignore[attr-defined]
        impl = factory() if not isinstance(factory, Implementation) else factory
        if not isinstance(impl, Implementation):
            raise UnknownImplementation(
                f"plugin {spec!r} did not produce an aclcheck Implementation")
        impl.spec = impl.spec or spec
        return impl
    if ":" in spec:
        from aclcheck.impls.callable_impl import CallableImpl

        return CallableImpl(spec)
    valid = list(BUILTIN) + sorted(plugins) + ["module:function", "--results FILE"]
    raise UnknownImplementation(f"unknown implementation {spec!r}; available: "
                                f"{', '.join(valid)}")


def available(describe: Callable[[str], Any] | None = None) -> list[ImplInfo]:
    """Every adapter name this installation knows, and whether it can run here.
    Built-in adapters are built here; plugins (user code) through `describe(name)`,
    which learns what it declares in another process (aclcheck.running.workers.adapter.describe),
    so a plugin that exits or hangs while imported is one row, not the end of the list."""
    from aclcheck.impls.callable_impl import signature

    infos: list[ImplInfo] = []
    plugins = sorted(_plugins())
    for name in list(BUILTIN) + plugins:
        try:
            impl = describe(name) if describe is not None and name in plugins else create(name)
        except (ImplementationUnavailable, UnknownImplementation) as exc:
            infos.append(ImplInfo(name, False, "", str(exc)))
            continue
        except Exception as exc:  # noqa: BLE001 - a broken plugin must not hide the others
            infos.append(ImplInfo(name, False, "", f"failed to load: {exc}"))
            continue
        scope = []
        scope.append("dtypes: " + (", ".join(impl.dtypes) if impl.dtypes else "any"))
        scope.append("products: " + (", ".join(impl.products) if impl.products else "any"))
        scope.append("status codes" if impl.has_status_codes else "rejects by raising")
        infos.append(ImplInfo(name, True, impl.description, "; ".join(scope)))
        if isinstance(impl, Implementation):
            impl.close()
    infos.append(ImplInfo("module:function", True,
                          f"any callable fn({signature()}) -> out (numpy arrays)",
                          "declare fn.aclcheck_dtypes / fn.aclcheck_products to SKIP others"))
    infos.append(ImplInfo("--results FILE", True,
                          "stored outputs of a run elsewhere (results layout)",
                          "status codes; missing cases are ERROR"))
    return infos
