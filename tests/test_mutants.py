"""tools/mutants.py stays in step with the code: each planted bug still applies to its file (a
refactor that moves the text must update the mutant, not silently drop the guarantee), and names
a test file that exists. Running the mutants themselves takes minutes: python tools/mutants.py."""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _mutants():
    if "awrsr_tools_mutants" not in sys.modules:
        spec = importlib.util.spec_from_file_location("awrsr_tools_mutants", ROOT / "tools" / "mutants.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    return sys.modules["awrsr_tools_mutants"].MUTANTS


@pytest.mark.parametrize("mutant", _mutants(), ids=lambda m: m.name)
def test_each_mutant_applies_once_and_names_an_existing_test(mutant):
    text = (ROOT / mutant.file).read_text(encoding="utf-8")
    assert text.count(mutant.old) == 1, f"{mutant.name}: its text is no longer in {mutant.file} exactly once"
    test_file, _, test_name = mutant.test.partition("::")
    assert mutant.new != mutant.old and (ROOT / test_file).is_file()
    if test_name:  # one test of the file: it must still be there
        assert f"def {test_name.split('[')[0]}(" in (ROOT / test_file).read_text(encoding="utf-8")


def test_mutant_names_are_unique():
    names = [m.name for m in _mutants()]
    assert len(names) == len(set(names))
