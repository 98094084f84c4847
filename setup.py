"""Build script. Metadata lives in pyproject.toml; this file only adds compiled parts."""

from setuptools import setup

setup()
