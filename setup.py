"""Ships the Coq library's sources in the wheel (pyproject.toml holds the metadata).

A wheel cannot carry compiled `.vo` files (they only load in the Coq build that made
them), so `build_py` copies `_CoqProject`, `CoqMakefile.local` (the build's settings)
and every `coq/**/*.v` into the package as `verisched/_coq/`; on first use an installed
package builds them into the user's cache directory (src/verisched/pybridge/library.py).
An editable install needs none of this: it uses the checkout's `coq/`, built by
`make proofs`.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithCoqSources(build_py):
    def run(self) -> None:
        super().run()
        root = Path(__file__).resolve().parent
        dest = Path(self.build_lib) / "verisched" / "_coq"
        files = [root / "_CoqProject", root / "CoqMakefile.local",
                 *sorted((root / "coq").rglob("*.v"))]
        for src in files:
            target = dest / src.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            self.copy_file(str(src), str(target))


setup(cmdclass={"build_py": BuildWithCoqSources})
