"""Build of the optional compiled pass (``dpstack/_fused.c``); everything else is in pyproject.toml.

The extension is optional: where it cannot be built (no C compiler, not x86-64 Linux with glibc
>= 2.35 for libmvec), pip installs dpstack without it and the solver uses its numpy pass.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "dpstack._fused",
            sources=["dpstack/_fused.c"],
            libraries=["mvec", "m"],
            extra_compile_args=["-O2", "-fno-fast-math", "-ffp-contract=off"],
            optional=True,
        )
    ]
)
