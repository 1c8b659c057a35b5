"""The one compiled part: the stats-block loop of the log parser (cascade_server/_accelsim_merge.c).

Optional: without a C compiler or Python's headers the build goes on without it and the parser
uses the same function in Python (cascade_server/accelsim_log.py), only slower. Everything else
about the package is in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("cascade_server._accelsim_merge", ["cascade_server/_accelsim_merge.c"], optional=True),
    ]
)
