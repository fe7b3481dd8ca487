"""Build hook: only the optional compiled parts; every piece of metadata is in pyproject.toml.

aclcheck.ops.adaptive_avg_pool2d_backward._spread (its _spread.c) speeds up the float64 reference backward with the
same arithmetic as its numpy path, bit for bit. It is optional: where no C compiler
exists the build skips it and the operator's reference.py falls back to numpy. No -march and no
fast-math: the kernel must round exactly as numpy does on every machine (an AVX2 clone
is chosen at run time where the CPU has it: wider lanes, the same roundings).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "aclcheck.ops.adaptive_avg_pool2d_backward._spread",
            sources=["aclcheck/ops/adaptive_avg_pool2d_backward/_spread.c"],
            extra_compile_args=["-O3", "-ffp-contract=off", "-fno-fast-math", "-Wno-psabi"],
            extra_link_args=["-pthread"],
            optional=True,
        ),
    ]
)
