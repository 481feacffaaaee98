"""The version of the code that runs: the package's, plus the commit of a checkout. Kept apart
from workflows (which imports Lightning) so that ``awrsr --version`` starts quickly."""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

import awrsr


@functools.lru_cache(maxsize=None)
def code_version() -> str:
    """The package version, plus the git commit of the imported code when it runs from a checkout
    (".dirty" if that tree has uncommitted changes). Computed once per process, at its first fit,
    so a long comparison records the code it imported, not a commit made while it ran."""
    return source_version(Path(awrsr.__file__).parent)


SOURCE_VERSION_VARIABLE = "AWRSR_SOURCE_VERSION"


def source_version(directory: Path) -> str:
    """``awrsr.__version__`` + "+g<commit>[.dirty]" for a package directory inside a git checkout.
    A copy of a checkout without its .git (the lent GPU's) is named by the environment variable
    AWRSR_SOURCE_VERSION, "g<commit>[.dirty]", written where the copy was made."""
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=directory, capture_output=True, text=True, timeout=5, check=True,
        ).stdout.strip()

    try:
        git("ls-files", "--error-unmatch", "--", ".")  # a copy inside another project's checkout (a .venv in it) is not that commit
        commit = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".")
    except (OSError, subprocess.SubprocessError):
        given = os.environ.get(SOURCE_VERSION_VARIABLE, "").strip()
        return f"{awrsr.__version__}+{given}" if given else awrsr.__version__
    return f"{awrsr.__version__}+g{commit}{'.dirty' if dirty else ''}"
