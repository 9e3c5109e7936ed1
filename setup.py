"""Packaging beyond pyproject.toml: the walkthroughs of ``tutorials/`` ship inside the package as
``ext.tutorials``, so that ``python -m ext tutorials`` finds them after ``pip install .``."""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["ext", "ext.*"]) + ["ext.tutorials"],
    package_dir={"ext.tutorials": "tutorials"},
)
