"""Data files shipped with splitdesk: question sets, the text generator's phrase bank, icons.

Read them with ``importlib.resources.files("splitdesk.resources")``; this folder is mapped
into the package by ``[tool.setuptools.package-dir]`` in pyproject.toml.
"""
