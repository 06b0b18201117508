"""Build hooks that pyproject.toml cannot express (compiled extensions)."""

from setuptools import setup

setup()
