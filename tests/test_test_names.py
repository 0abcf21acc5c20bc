"""The test folders are not packages, so pytest imports each test file by its base name: two files of the
same name in different folders stop the whole run at collection ("import file mismatch"), as
tests/browser/test_writes_graph.py beside tests/pipelines/test_writes_graph.py once did in CI."""

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_every_test_file_name_is_unique():
    where = defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        where[path.name].append(str(path.relative_to(TESTS)))
    assert {name: paths for name, paths in where.items() if len(paths) > 1} == {}
