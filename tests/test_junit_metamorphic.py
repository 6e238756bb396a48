"""Metamorphic property of the JUnit reading (issue 23): transformations that keep every test's
identity and outcome never turn a blocking verdict into a pass.

For every pair of real files with a blocking change (the generated corpus, whose truths come
from the tools, and the producer fixtures), each transformation is applied and the diff is
either refused (exit 2) or still blocks, with as many blocking rows where both files were
transformed alike. Counters a transformation changes are updated, so the file still agrees
with itself."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from collections.abc import Callable
from pathlib import Path

import pytest

from evalarc.errors import InputError
from evalarc.formats.load import load_results
from evalarc.review.diff import BLOCKING_KINDS, DiffOptions, compute_diff

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus" / "junit"
FIXTURES = HERE / "fixtures" / "junit_producers"
PAIRS: list[tuple[str, Path, Path]] = [
    (folder.name, folder / "baseline.xml", folder / "current.xml")
    for folder in sorted(CORPUS.iterdir())
    if (folder / "truth.json").is_file()
] + [
    (
        name,
        FIXTURES / f"{name}.baseline.xml",
        FIXTURES / f"{name}.current.xml",
    )
    for name in ("googletest", "rspec-same-name", "playwright")
]


def _root(path: Path) -> ElementTree.Element:
    """The file's tree, comments kept (node's totals are root comments)."""
    parser = ElementTree.XMLParser(target=ElementTree.TreeBuilder(insert_comments=True))
    return ElementTree.fromstring(path.read_bytes(), parser=parser)


def _reverse_suites(root: ElementTree.Element) -> ElementTree.Element:
    """The top-level suites (or a root suite's testcases) in reverse order."""
    children = list(root)
    kept = [c for c in children if c.tag not in ("testsuite", "testcase")]
    kept.sort(key=lambda c: c.tag is ElementTree.Comment)  # node's comments stay last
    moved = [c for c in children if c.tag in ("testsuite", "testcase")]
    root[:] = kept + moved[::-1]
    return root


def _add_same_named_test(root: ElementTree.Element) -> ElementTree.Element:
    """An unrelated passing test, named as the first test, in a suite of its own."""
    first = next(root.iter("testcase"))
    extra = ElementTree.Element("testsuite", {"name": "zz unrelated", "tests": "1"})
    attributes = {k: v for k, v in first.attrib.items() if k in ("name", "classname")}
    ElementTree.SubElement(extra, "testcase", attributes)
    for comment in root:
        words = (comment.text or "").split() if comment.tag is ElementTree.Comment else []
        if len(words) == 2 and words[0] in ("tests", "pass") and words[1].isdigit():
            comment.text = f" {words[0]} {int(words[1]) + 1} "  # node's own totals
    if root.tag == "testsuites":
        root.insert(0, extra)
        if "tests" in root.attrib:
            root.set("tests", str(int(root.get("tests") or 0) + 1))
    else:
        copy = ElementTree.Element("testcase", attributes)
        root.append(copy)
        if "tests" in root.attrib:
            root.set("tests", str(int(root.get("tests") or 0) + 1))
    return root


REFUSED: list[tuple[str, str]] = []
"""(pair, transformation) the diff refused (exit 2) rather than read: never a pass."""

Transform = Callable[[ElementTree.Element], ElementTree.Element]
TRANSFORMS: dict[str, tuple[Transform, bool]] = {
    # name: (transformation, applied to both files)
    "reverse suites in both": (_reverse_suites, True),
    "reverse suites in current": (_reverse_suites, False),
    "add a same-named test in another suite": (_add_same_named_test, False),
}


def _blocking(baseline: Path, current: Path) -> int | None:
    """Blocking rows of the diff, or None when it is refused."""
    try:
        report = compute_diff(
            load_results(baseline),
            load_results(current),
            DiffOptions(threshold=1.0),
            created_at="2026-01-01T00:00:00Z",
        )
    except InputError:
        return None
    assert report["gate_passed"] is (report["blocking_changes"] == 0)
    return sum(1 for row in report["changes"] if row["kind"] in BLOCKING_KINDS)


@pytest.mark.parametrize("transform", sorted(TRANSFORMS))
@pytest.mark.parametrize(("pair", "baseline", "current"), PAIRS, ids=[p[0] for p in PAIRS])
def test_no_transformation_turns_a_blocking_pair_into_a_pass(
    tmp_path: Path, pair: str, baseline: Path, current: Path, transform: str
) -> None:
    original = _blocking(baseline, current)
    assert original is not None and original > 0, pair
    change, both = TRANSFORMS[transform]
    new_current = tmp_path / "current.xml"
    new_current.write_bytes(ElementTree.tostring(change(_root(current))))
    new_baseline = baseline
    if both:
        new_baseline = tmp_path / "baseline.xml"
        new_baseline.write_bytes(ElementTree.tostring(change(_root(baseline))))
    after = _blocking(new_baseline, new_current)
    if after is None:
        REFUSED.append((pair, transform))
    assert after is None or after > 0, (pair, transform)
    if both and after is not None:
        assert after == original, (pair, transform)


def test_the_property_covers_every_pair_and_transformation() -> None:
    assert len(PAIRS) >= 15 and len(TRANSFORMS) == 3
