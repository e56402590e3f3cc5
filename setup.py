"""The build: the free-text detector's hot modules compiled to C by mypyc (docs/text.md, "Compiled"); the rest of the
project, and its metadata, in pyproject.toml.

The compiled modules are the same Python modules, type-checked and translated to C at build time (mypyc, part of
mypy): a note goes through them about 1.3 times as fast as through the interpreter. They are optional extensions:
the package installs and runs as Python where they cannot be built, slower and otherwise the same. They are not
built

- for an editable install (``pip install -e .``), whose modules are edited (a compiled module beside its source
  would be imported in its place);
- with ``DEID_PURE_PYTHON=1`` in the environment.

``tests/deid_core/text/test_compiled.py`` checks that a non-editable install compiled them and that they find
exactly the spans the Python modules find."""
from __future__ import annotations

import os
import sys

from setuptools import setup

#: The modules a note goes through, in dependency order: compiled together, one shared library.
COMPILED = ["deid_core/text/spans.py", "deid_core/text/lists.py", "deid_core/text/note.py",
            "deid_core/text/textdates.py", "deid_core/text/resolve.py", "deid_core/text/recognizers.py",
            "deid_core/text/names.py", "deid_core/text/hints.py"]
#: The setuptools commands that build the package's files (not its metadata, not an editable install).
_BUILDS = {"bdist_wheel", "build", "build_ext", "install"}


def compiled_extensions() -> list:
    if os.environ.get("DEID_PURE_PYTHON") == "1" or not _BUILDS & set(sys.argv[1:]):
        return []
    from mypyc.build import mypycify
    # Only the compiled modules are checked; the modules they import are read for their types (pandas and the
    # other libraries are not installed where the wheel is built).
    extensions = mypycify(["--ignore-missing-imports", "--follow-imports=silent", *COMPILED],
                          group_name="deid_core_text")
    for extension in extensions:
        extension.optional = True  # no C compiler: the modules run as Python
    return extensions


setup(ext_modules=compiled_extensions())
