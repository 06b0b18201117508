"""Build hooks that pyproject.toml cannot express (compiled extensions)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        # The rules library's legal-play fast path; services/backgammon/movegen.py is its
        # pure-Python reference and the fallback when the extension is not built.
        Extension(
            "services.backgammon._fastmoves",
            ["services/backgammon/_fastmoves.c"],
            extra_compile_args=["-O3", "-std=c11"],
        ),
        # The analysis engine's money evaluation around the net call (classification,
        # Janowski, the cube decision); domain/engine.py is its reference and fallback.
        Extension(
            "services.analysis.domain._fastcube",
            ["services/analysis/domain/_fastcube.c"],
            extra_compile_args=["-O3", "-std=c11"],
        ),
    ],
)
