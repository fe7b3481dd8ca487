"""The options of `--impl aclnn`, declared beside the adapter that reads them: the
library folders and the device, the environment variables that carry them (and the
product) into isolated workers, and putting a run's values there.

The adapter reads the variables (aclnn_impl.from_environment), never a command's
options, so a worker that rebuilds it from its spec sees the same values.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from aclcheck.cases.acl import PRODUCTS
from aclcheck.errors import AclcheckError, UsageError
from aclcheck.options import Kind, Option

#: Environment variables the adapter reads (the CLI sets them, so an isolated worker
#: process inherits them).
ENV_LIB_DIR = "ACLCHECK_ACLNN_LIB_DIR"  # os.pathsep-separated folders; replaces the search
ENV_DEVICE = "ACLCHECK_ACLNN_DEVICE"
ENV_PRODUCT = "ACLCHECK_ACLNN_PRODUCT"

LIB_DIRS = Option(
    "aclnn_lib_dirs", "--aclnn-lib-dir", (), kind=Kind.DIR, multiple=True, metavar="DIR",
    repro=True, doc="aclnn library folders",
    help="--impl aclnn: folder with libascendcl.so, libnnopbase.so, libopapi.so (repeatable; "
         "replaces the ASCEND_HOME_PATH / LD_LIBRARY_PATH search). A single --product names "
         "the device's product.")
DEVICE = Option(
    "aclnn_device", "--aclnn-device", None, kind=Kind.INT, minimum=0, metavar="N",
    repro=True, doc="aclnn device id", help="--impl aclnn: device id (default 0).")
#: the options verify takes for this adapter, in the order it lists them
OPTIONS: tuple[Option, ...] = (LIB_DIRS, DEVICE)


def product_rules(name: str, error: type[AclcheckError]) -> None:
    """`error` unless `name` is a hardware product (listing the valid ones)."""
    if name not in PRODUCTS:
        raise error(f"unknown product {name!r}; valid: {', '.join(PRODUCTS)}")


def configure_environment(lib_dirs: Sequence[str] = (), device: int | None = None,
                          products: Sequence[str] = ()) -> Callable[[], None]:
    """Put the CLI's aclnn options into the environment (inherited by isolated workers);
    returns the function that restores the previous values.

    A single --product names the device's product (more than one: the SoC decides).
    """
    wanted: dict[str, str] = {}
    if lib_dirs:
        wanted[ENV_LIB_DIR] = os.pathsep.join(str(d) for d in lib_dirs)
    if device is not None:
        wanted[ENV_DEVICE] = str(device)
    if len(products) == 1:
        product_rules(products[0], UsageError)
        wanted[ENV_PRODUCT] = products[0]
    saved = {key: os.environ.get(key) for key in wanted}
    os.environ.update(wanted)

    def restore() -> None:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value

    return restore
