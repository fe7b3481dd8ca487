"""The CANN C ABI that `--impl aclnn` calls: where the libraries are, how to load them,
and the ctypes prototypes of every function used (signatures as in the CANN headers).

Nothing here runs the operator; aclnn_impl.py does. Kept apart so the prototypes can be
read against the headers in one place.
"""

from __future__ import annotations

import ctypes
import os
import platform
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aclcheck.errors import ImplementationUnavailable
from aclcheck.impls.aclnn_options import ENV_LIB_DIR

#: (role, candidate file names in order of preference), loaded in this order.
LIBRARIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("runtime", ("libascendcl.so",)),
    ("tensors", ("libnnopbase.so",)),
    ("operator", ("libopapi.so", "libopapi_nn.so")),
)
DEFAULT_INSTALLS = ("/usr/local/Ascend/ascend-toolkit/latest", "/usr/local/Ascend/cann")

ACL_SUCCESS = 0
ACL_ERROR_REPEAT_INITIALIZE = 100002
ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
ACL_OPT_DETERMINISTIC = 0


def search_dirs(lib_dirs: Sequence[str] | None = None,
                env: Mapping[str, str] | None = None) -> tuple[list[Path], str]:
    """Folders to search, in order, and where that list came from.

    Explicit folders (the option, else ACLCHECK_ACLNN_LIB_DIR) replace the search; otherwise
    ASCEND_HOME_PATH, ASCEND_TOOLKIT_HOME (each: lib64, <arch>-linux/lib64, lib), the
    LD_LIBRARY_PATH entries and the default install folders.
    """
    env = os.environ if env is None else env
    if lib_dirs:
        return [Path(d) for d in lib_dirs], "--aclnn-lib-dir"
    if env.get(ENV_LIB_DIR):
        return [Path(d) for d in env[ENV_LIB_DIR].split(os.pathsep) if d], ENV_LIB_DIR
    arch = f"{platform.machine()}-linux"
    dirs: list[Path] = []
    roots = [env[k] for k in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME") if env.get(k)]
    for root in [*roots, *DEFAULT_INSTALLS]:
        dirs += [Path(root) / "lib64", Path(root) / arch / "lib64", Path(root) / "lib"]
    dirs += [Path(d) for d in env.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d]
    unique = list(dict.fromkeys(dirs))
    state = ", ".join(f"{k} {'set' if env.get(k) else 'unset'}"
                      for k in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "LD_LIBRARY_PATH"))
    return unique, f"the default search: {state}, default installs"


def find_libraries(lib_dirs: Sequence[str] | None = None,
                   env: Mapping[str, str] | None = None) -> dict[str, Path]:
    """role -> library path; ImplementationUnavailable naming the missing files and folders."""
    dirs, origin = search_dirs(lib_dirs, env)
    found: dict[str, Path] = {}
    missing: list[str] = []
    for role, names in LIBRARIES:
        hit = next((d / n for n in names for d in dirs if (d / n).is_file()), None)
        if hit is None:
            missing.append(" or ".join(names))
        else:
            found[role] = hit
    if missing:
        where = ", ".join(str(d) for d in dirs) or "(no folder)"
        raise ImplementationUnavailable(
            f"CANN libraries not found: {'; '.join(missing)} (searched {where}, from "
            f"{origin}). Run `source <cann>/set_env.sh` or pass --aclnn-lib-dir DIR.")
    return found


# -- prototypes ----------------------------------------------------------------------------

_p = ctypes.c_void_p
_pp = ctypes.POINTER(ctypes.c_void_p)
_i64p = ctypes.POINTER(ctypes.c_int64)
_int = ctypes.c_int

#: name -> (restype, argtypes, required). aclError / aclnnStatus are int; enums are int.
PROTOTYPES: dict[str, tuple[Any, list[Any], bool]] = {
    "aclInit": (_int, [ctypes.c_char_p], True),
    "aclFinalize": (_int, [], True),
    "aclrtSetDevice": (_int, [ctypes.c_int32], True),
    "aclrtResetDevice": (_int, [ctypes.c_int32], True),
    "aclrtCreateStream": (_int, [_pp], True),
    "aclrtDestroyStream": (_int, [_p], True),
    "aclrtSynchronizeStream": (_int, [_p], True),
    "aclrtMalloc": (_int, [_pp, ctypes.c_size_t, _int], True),
    "aclrtFree": (_int, [_p], True),
    "aclrtMemcpy": (_int, [_p, ctypes.c_size_t, _p, ctypes.c_size_t, _int], True),
    "aclGetRecentErrMsg": (ctypes.c_char_p, [], False),
    "aclrtCtxSetSysParamOpt": (_int, [_int, ctypes.c_int64], False),
    "aclrtGetSocName": (ctypes.c_char_p, [], False),
    # aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum,
    #     aclDataType dataType, const int64_t *stride, int64_t offset, aclFormat format,
    #     const int64_t *storageDims, uint64_t storageDimsNum, void *tensorData)
    "aclCreateTensor": (_p, [_i64p, ctypes.c_uint64, _int, _i64p, ctypes.c_int64, _int,
                             _i64p, ctypes.c_uint64, _p], True),
    "aclDestroyTensor": (_int, [_p], True),
}


def operator_prototypes(name: str, tensors: int) -> dict[str, tuple[Any, list[Any], bool]]:
    """An aclnn operator's two functions (its AclnnSignature):

        aclnnStatus {name}GetWorkspaceSize(const aclTensor *..., (one per tensor)
            uint64_t *workspaceSize, aclOpExecutor **executor)
        aclnnStatus {name}(void *workspace, uint64_t workspaceSize,
            aclOpExecutor *executor, aclrtStream stream)
    """
    return {f"{name}GetWorkspaceSize": (_int, [_p] * tensors
                                        + [ctypes.POINTER(ctypes.c_uint64), _pp], True),
            name: (_int, [_p, ctypes.c_uint64, _p, _p], True)}


def _operators() -> dict[str, tuple[Any, list[Any], bool]]:
    """The prototypes of every operator aclcheck knows (each from its glue)."""
    from aclcheck import ops

    out: dict[str, tuple[Any, list[Any], bool]] = {}
    for op in ops.OPERATORS.values():
        out.update(operator_prototypes(op.glue.aclnn.name, len(op.glue.aclnn.tensors)))
    return out


#: Library role of each runtime function (others are searched as a fallback); every
#: operator function is expected in the operator library.
HOME: dict[str, str] = {name: "runtime" for name in PROTOTYPES}
HOME.update(aclCreateTensor="tensors", aclDestroyTensor="tensors")


@dataclass
class Api:
    """Bound functions (None for an optional one the libraries lack) and their sources."""

    functions: dict[str, Any]
    paths: dict[str, Path]

    def __getattr__(self, name: str) -> Any:
        try:
            return self.functions[name]
        except KeyError:
            raise AttributeError(name) from None


_LOADED: dict[tuple[Path, ...], Api] = {}


def load(paths: Mapping[str, Path]) -> Api:
    """Load the libraries (RTLD_GLOBAL, runtime -> tensors -> operator) and bind every
    prototype. Loaded once per process per set of files (dlopen keeps them anyway)."""
    key = tuple(paths[role] for role, _ in LIBRARIES)
    if key in _LOADED:
        return _LOADED[key]
    libs: dict[str, ctypes.CDLL] = {}
    for role, _ in LIBRARIES:
        try:
            libs[role] = ctypes.CDLL(str(paths[role]), mode=ctypes.RTLD_GLOBAL)
        except OSError as exc:
            raise ImplementationUnavailable(f"cannot load {paths[role]}: {exc}") from None
    functions: dict[str, Any] = {}
    for name, (restype, argtypes, required) in {**PROTOTYPES, **_operators()}.items():
        home = HOME.get(name, "operator")
        order = [home] + [r for r in libs if r != home]
        fn = None
        for role in order:
            try:
                fn = getattr(libs[role], name)
                break
            except AttributeError:
                continue
        if fn is None:
            if required:
                raise ImplementationUnavailable(
                    f"{name} not found in {', '.join(str(paths[r]) for r in order)}")
            functions[name] = None
            continue
        fn.restype, fn.argtypes = restype, argtypes
        functions[name] = fn
    api = Api(functions, dict(paths))
    _LOADED[key] = api
    return api


def int64_array(values: Sequence[int]) -> Any:
    """A C int64_t[] holding values (at least one slot, so the pointer is never NULL)."""
    return (ctypes.c_int64 * max(len(values), 1))(*values)
