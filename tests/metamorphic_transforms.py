"""Rewrites of real result files that keep every test's identity and outcome (issue 23's
metamorphic property; used by tests/test_metamorphic.py).

Each transformation takes the parsed content of one side and returns new bytes. A transformation
must leave the file self-consistent: a JUnit suite's ``tests``/``failures``/``errors``/``skipped``
counters, promptfoo's row ``success`` and ``results.stats``, Inspect's ``results.scores`` all
still describe what the file holds. A transformation that changed a test's identity or outcome
would be a bug here, not in a reader, so the rules below are deliberately narrow:

- reorderings are stable within one identity key (two elements the producer names alike keep
  their relative order: they are told apart only by position, or they are attempts of one test);
- insertions add tests that pass, named so that nothing already in the file is renamed, and the
  same insertion goes into both sides unless the transformation is one-sided on purpose.
"""

from __future__ import annotations

import copy
import io
import json
import struct
import xml.etree.ElementTree as ElementTree
import zipfile
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

_T = TypeVar("_T")


def stable_reverse(items: Sequence[_T], key: Callable[[_T], Hashable]) -> list[_T]:
    """``items`` with the groups of equal ``key`` in reverse order of first appearance, each
    group's members in their original order (a permutation that never swaps two items the
    producer names alike)."""
    groups: dict[Hashable, list[_T]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    result: list[_T] = []
    for group in reversed(list(groups.values())):
        result.extend(group)
    return result


# -- JUnit XML ----------------------------------------------------------------------------------

COUNTERS = ("tests", "failures", "errors", "skipped", "disabled")
OUTCOME_TAGS = frozenset(
    {"failure", "error", "skipped", "rerunFailure", "rerunError", "flakyFailure", "flakyError"}
)
OTHER_SUITE = "metamorphic other suite"
OTHER_PROJECT = "metamorphic other project"
OTHER_CLASS_PREFIX = "metamorphic_other."
OTHER_PROJECT_TESTS = ("metamorphic_extra_one", "metamorphic_extra_two", "metamorphic_extra_three")


def parse_xml(data: bytes) -> ElementTree.Element:
    """The document's root, comments kept (node's test runner writes them as its own marker)."""
    parser = ElementTree.XMLParser(target=ElementTree.TreeBuilder(insert_comments=True))
    parser.feed(data)
    return parser.close()


def write_xml(root: ElementTree.Element) -> bytes:
    buffer = io.BytesIO()
    ElementTree.ElementTree(root).write(buffer, encoding="utf-8", xml_declaration=True)
    return buffer.getvalue()


def _tag(element: ElementTree.Element) -> str:
    return element.tag.rsplit("}", 1)[-1] if isinstance(element.tag, str) else ""


def _permute(parent: ElementTree.Element, tag: str, key: Callable[[Any], Hashable]) -> None:
    """Permute the ``tag`` children of ``parent`` among the slots they occupy (other children
    stay where they are)."""
    children = list(parent)
    slots = [index for index, child in enumerate(children) if _tag(child) == tag]
    moved = stable_reverse([children[index] for index in slots], key)
    for index, child in zip(slots, moved, strict=True):
        children[index] = child
    parent[:] = children


def _suite_key(suite: ElementTree.Element) -> Hashable:
    return (suite.get("name"), suite.get("file"))


def _case_key(testcase: ElementTree.Element) -> Hashable:
    return (testcase.get("classname"), testcase.get("name"), testcase.get("file"))


def junit_reorder_suites(root: ElementTree.Element) -> ElementTree.Element:
    """Every element's ``<testsuite>`` children reordered (at every nesting level)."""
    for element in root.iter():
        _permute(element, "testsuite", _suite_key)
    return root


def junit_reorder_testcases(root: ElementTree.Element) -> ElementTree.Element:
    """Every suite's ``<testcase>`` children reordered (repeats of one test keep their order)."""
    for element in root.iter():
        if _tag(element) in ("testsuite", "testsuites"):
            _permute(element, "testcase", _case_key)
    return root


def all_testcases(root: ElementTree.Element) -> list[ElementTree.Element]:
    return [element for element in root.iter() if _tag(element) == "testcase"]


def passing_copy(testcase: ElementTree.Element) -> ElementTree.Element:
    """A copy of ``testcase`` that passes: no outcome child, no captured output, no outcome
    attribute (node's ``failure=``), ctest's ``status`` set to ``run``."""
    element = ElementTree.Element(testcase.tag, dict(testcase.attrib))
    element.attrib.pop("failure", None)
    if "status" in element.attrib:
        element.set("status", "run")
    if "result" in element.attrib:
        element.set("result", "completed")
    element.text = testcase.text
    element.tail = testcase.tail
    return element


def _counter(element: ElementTree.Element, name: str, delta: int) -> None:
    value = element.get(name)
    if value is not None and delta:
        element.set(name, str(int(value) + delta))


def _new_suite(template: ElementTree.Element, name: str, tests: int) -> ElementTree.Element:
    """A suite shaped like ``template`` (same attributes) holding ``tests`` passing tests."""
    suite = ElementTree.Element(template.tag, dict(template.attrib))
    suite.set("name", name)
    for counter in COUNTERS:
        if counter in suite.attrib:
            suite.set(counter, str(tests if counter == "tests" else 0))
    if "file" in suite.attrib:
        suite.set("file", "metamorphic/other_file")
    if "time" in suite.attrib:
        suite.set("time", "0")
    suite.text = template.text
    suite.tail = template.tail
    return suite


def _wrapped(root: ElementTree.Element) -> ElementTree.Element:
    """``root`` itself when it is a ``<testsuites>``; a lone ``<testsuite>`` wrapped in one
    whose counters (where the suite has them) are the suite's own."""
    if _tag(root) == "testsuites":
        return root
    wrapper = ElementTree.Element("testsuites")
    for counter in COUNTERS:
        if counter in root.attrib:
            wrapper.set(counter, root.attrib[counter])
    wrapper.text = "\n"
    root.tail = "\n"
    wrapper.append(root)
    return wrapper


def junit_wrap(root: ElementTree.Element) -> ElementTree.Element:
    """A lone root ``<testsuite>`` inside a ``<testsuites>`` (nothing else changes)."""
    return _wrapped(root)


def template_suite(root: ElementTree.Element) -> ElementTree.Element:
    """The first ``<testsuite>``: inserted suites copy its attributes. One template serves both
    sides, so an inserted suite is the same test on each (Playwright's project is the suite's
    ``hostname``)."""
    for element in root.iter():
        if _tag(element) == "testsuite":
            return element
    raise ValueError("no <testsuite> in the file")


def _insert_suite(
    root: ElementTree.Element, suite: ElementTree.Element, first: bool
) -> ElementTree.Element:
    """``suite`` added to the document root (wrapping a lone suite first), counters updated."""
    root = _wrapped(root)
    children = list(root)
    suites = [index for index, child in enumerate(children) if _tag(child) == "testsuite"]
    if first and suites:
        root.insert(suites[0], suite)
    else:
        root.append(suite)
    added = len(all_testcases(suite))
    _counter(root, "tests", added)
    _count_in_comments(root, {"tests": added, "pass": added, "suites": 1})
    return root


def _node_comments(root: ElementTree.Element) -> dict[str, ElementTree.Element]:
    """node's test runner's own totals, written as root comments (``<!-- tests 13 -->``)."""
    found = {}
    for child in root:
        if child.tag is ElementTree.Comment and child.text:
            words = child.text.split()
            if len(words) == 2 and words[1].isdigit():
                found[words[0]] = child
    return found


def _count_in_comments(root: ElementTree.Element, deltas: dict[str, int]) -> None:
    comments = _node_comments(root)
    for name, delta in deltas.items():
        comment = comments.get(name)
        if comment is not None and comment.text is not None:
            comment.text = f" {name} {int(comment.text.split()[1]) + delta} "


def mirror_templates(*roots: ElementTree.Element) -> list[ElementTree.Element]:
    """One testcase per distinct (classname, name) over all ``roots``, first seen first.
    GoogleTest's ``DISABLED_`` tests are left out: it never runs one, so a passing copy would
    be a test no producer writes."""
    seen: dict[Hashable, ElementTree.Element] = {}
    for root in roots:
        for testcase in all_testcases(root):
            names = (testcase.get("classname") or "", testcase.get("name") or "")
            if any(part.startswith("DISABLED_") for name in names for part in name.split(".")):
                continue
            seen.setdefault((testcase.get("classname"), testcase.get("name")), testcase)
    return list(seen.values())


def junit_mirror(
    root: ElementTree.Element,
    templates: Sequence[ElementTree.Element],
    suite_template: ElementTree.Element,
    *,
    first: bool,
    other_classname: bool,
) -> ElementTree.Element:
    """Add a suite of another name holding a passing test of the same name as every test in
    ``templates`` (classname prefixed when ``other_classname``; node's constant ``test`` is its
    producer marker and is kept)."""
    suite = _new_suite(suite_template, OTHER_SUITE, len(templates))
    for template in templates:
        copy_ = passing_copy(template)
        classname = copy_.get("classname")
        if other_classname and classname not in (None, "", "test"):
            copy_.set("classname", OTHER_CLASS_PREFIX + classname)
        suite.append(copy_)
    return _insert_suite(root, suite, first)


def junit_other_project(
    root: ElementTree.Element,
    template: ElementTree.Element,
    suite_template: ElementTree.Element,
    *,
    first: bool,
) -> ElementTree.Element:
    """Add a suite for another project/file holding passing tests of new names."""
    suite = _new_suite(suite_template, OTHER_PROJECT, len(OTHER_PROJECT_TESTS))
    for name in OTHER_PROJECT_TESTS:
        element = passing_copy(template)
        element.set("name", name)
        classname = template.get("classname")
        if classname == template.get("name"):
            element.set("classname", name)  # ctest and jest write the name twice
        elif classname not in (None, "", "test"):
            element.set("classname", "metamorphic_project.tests")
        suite.append(element)
    return _insert_suite(root, suite, first)


# -- promptfoo JSON -----------------------------------------------------------------------------


def _rows(document: dict[str, Any]) -> list[dict[str, Any]]:
    rows = document["results"]["results"]
    assert isinstance(rows, list)
    return rows


def provider_label(provider: object) -> str:
    """How promptfoo's row names its provider (label, else id)."""
    if isinstance(provider, str):
        return provider
    if isinstance(provider, dict):
        for key in ("label", "id"):
            value = provider.get(key)
            if isinstance(value, str) and value:
                return value
    return "provider"


def prompt_name(row: dict[str, Any]) -> str:
    prompt = row.get("prompt") or {}
    for key in ("label", "id"):
        value = prompt.get(key)
        if isinstance(value, str) and value:
            return value
    return str(row.get("promptIdx"))


def _row_key(row: dict[str, Any]) -> Hashable:
    test_case = row.get("testCase") or {}
    return (
        test_case.get("description"),
        json.dumps(test_case.get("vars", row.get("vars")), sort_keys=True),
        provider_label(row.get("provider")),
        prompt_name(row),
    )


def promptfoo_reorder_rows(document: dict[str, Any]) -> dict[str, Any]:
    """``results.results`` reordered (repeats of one test keep their order)."""
    document["results"]["results"] = stable_reverse(_rows(document), _row_key)
    return document


def _assertion_key(assertion: object) -> Hashable:
    return json.dumps(assertion, sort_keys=True)


def _components(row: dict[str, Any]) -> list[Any] | None:
    grading = row.get("gradingResult")
    if not isinstance(grading, dict):
        return None
    components = grading.get("componentResults")
    return components if isinstance(components, list) and components else None


def promptfoo_reorder_components(document: dict[str, Any]) -> dict[str, Any]:
    """Each row's ``componentResults`` (and its test's ``assert`` list, which promptfoo keeps
    in the same order) reordered; two identical assertions keep their order."""
    for row in _rows(document):
        components = _components(row)
        if components is None:
            continue
        row["gradingResult"]["componentResults"] = stable_reverse(
            components, lambda component: _assertion_key(component.get("assertion"))
        )
        declared = (row.get("testCase") or {}).get("assert")
        if isinstance(declared, list):
            row["testCase"]["assert"] = stable_reverse(declared, _assertion_key)
    return document


DEFAULT_METRIC = "metamorphic-default"


def graded_tests(*documents: dict[str, Any]) -> set[Hashable]:
    """The tests (matrix keys) that every one of ``documents`` holds, with component results
    in each of their rows: where an added assertion passes on every side. (On a test missing
    from a side, or a side where the provider errored, an added check is a real new row.)"""
    result: set[Hashable] | None = None
    for document in documents:
        graded: set[Hashable] = set()
        ungraded: set[Hashable] = set()
        for row in _rows(document):
            (graded if _components(row) is not None else ungraded).add(_row_key(row))
        keys = graded - ungraded
        result = keys if result is None else result & keys
    return result or set()


def promptfoo_prepend_default(
    document: dict[str, Any], tests: set[Hashable], *, shared_metric: bool
) -> dict[str, Any]:
    """Prepend a passing ``defaultTest``-style assertion to every row of ``tests`` (see
    :func:`graded_tests`; promptfoo puts ``defaultTest.assert`` before the test's own). With
    ``shared_metric`` it carries the metric of the row's first named assertion (issue 23: a
    default assertion sharing a metric), else a metric of its own. Row ``success`` and
    ``results.stats`` stay as they are (a passing assertion changes neither); the prompts'
    ``assertPassCount`` grows by one per row."""
    added: dict[str, int] = {}
    for row in _rows(document):
        components = _components(row)
        if components is None or _row_key(row) not in tests:
            continue
        metric = DEFAULT_METRIC
        if shared_metric:
            for component in components:
                named = (component.get("assertion") or {}).get("metric")
                if isinstance(named, str) and named:
                    metric = named
                    break
        assertion = {"type": "icontains", "value": "", "metric": metric}
        component = {
            "pass": True,
            "score": 1,
            "reason": "Assertion passed",
            "assertion": assertion,
        }
        components.insert(0, component)
        test_case = row.get("testCase")
        if isinstance(test_case, dict):
            declared = test_case.get("assert")
            test_case["assert"] = [
                dict(assertion),
                *(declared if isinstance(declared, list) else []),
            ]
        if metric == DEFAULT_METRIC:
            for holder in (row, row["gradingResult"]):
                scores = holder.get("namedScores")
                if isinstance(scores, dict):
                    scores[DEFAULT_METRIC] = 1
        prompt_id = row.get("promptId")
        if isinstance(prompt_id, str):
            key = f"{prompt_id}\0{json.dumps(row.get('provider'), sort_keys=True)}"
            added[key] = added.get(key, 0) + 1
    for prompt in document["results"].get("prompts") or []:
        metrics = prompt.get("metrics")
        key = f"{prompt.get('id')}\0{json.dumps(_prompt_provider(prompt), sort_keys=True)}"
        if isinstance(metrics, dict) and "assertPassCount" in metrics:
            metrics["assertPassCount"] += _added_for(added, prompt, key)
    return document


def _prompt_provider(prompt: dict[str, Any]) -> object:
    return prompt.get("provider")


def _added_for(added: dict[str, int], prompt: dict[str, Any], key: str) -> int:
    """Rows counted for one ``results.prompts`` entry: matched on prompt id and provider
    (a prompt entry names its provider by id, a row by object), else on the prompt id alone
    when the file has a single entry for it."""
    if key in added:
        return added[key]
    prompt_id = prompt.get("id")
    total = 0
    for name, count in added.items():
        row_prompt, row_provider = name.split("\0", 1)
        provider = json.loads(row_provider)
        provider_id = provider.get("id") if isinstance(provider, dict) else provider
        if row_prompt == prompt_id and provider_id == prompt.get("provider"):
            total += count
    return total


COPY_SUFFIX = "-metamorphic"


def _copy_provider(provider: object) -> object:
    if isinstance(provider, str):
        return provider + COPY_SUFFIX
    if isinstance(provider, dict):
        copied = dict(provider)
        for key in ("id", "label"):
            value = copied.get(key)
            if isinstance(value, str) and value:
                copied[key] = value + COPY_SUFFIX
        return copied
    return provider


def _double_stats(document: dict[str, Any]) -> None:
    stats = document["results"].get("stats")
    if isinstance(stats, dict):
        for key in ("successes", "failures", "errors"):
            if isinstance(stats.get(key), int):
                stats[key] *= 2


def promptfoo_add_provider(document: dict[str, Any]) -> dict[str, Any]:
    """Every row duplicated for another provider (each provider ``P`` gets a copy
    ``P-metamorphic``, so two providers' rows never merge), same verdicts; ``results.stats``
    doubled and ``results.prompts`` given the copies' entries."""
    rows = _rows(document)
    copies = []
    for row in rows:
        duplicate = copy.deepcopy(row)
        duplicate["provider"] = _copy_provider(row.get("provider"))
        if isinstance(duplicate.get("id"), str):
            duplicate["id"] = duplicate["id"] + COPY_SUFFIX
        copies.append(duplicate)
    document["results"]["results"] = rows + copies
    prompts = document["results"].get("prompts")
    if isinstance(prompts, list):
        extra = []
        for prompt in prompts:
            duplicate = copy.deepcopy(prompt)
            duplicate["provider"] = _copy_provider(prompt.get("provider"))
            extra.append(duplicate)
        prompts.extend(extra)
    _double_stats(document)
    return document


PROMPT_SUFFIX = " (metamorphic)"


def promptfoo_add_prompt(document: dict[str, Any]) -> dict[str, Any]:
    """Every row duplicated for another prompt label (and prompt id), same verdicts;
    ``results.stats`` doubled and ``results.prompts`` given the copies' entries."""
    rows = _rows(document)
    copies = []
    for row in rows:
        duplicate = copy.deepcopy(row)
        prompt = duplicate.get("prompt")
        if isinstance(prompt, dict):
            prompt["label"] = prompt_name(row) + PROMPT_SUFFIX
            if isinstance(prompt.get("id"), str):
                prompt["id"] = prompt["id"] + "m"
        if isinstance(duplicate.get("promptId"), str):
            duplicate["promptId"] = duplicate["promptId"] + "m"
        if isinstance(duplicate.get("id"), str):
            duplicate["id"] = duplicate["id"] + COPY_SUFFIX
        copies.append(duplicate)
    document["results"]["results"] = rows + copies
    prompts = document["results"].get("prompts")
    if isinstance(prompts, list):
        extra = []
        for prompt in prompts:
            duplicate = copy.deepcopy(prompt)
            duplicate["label"] = (prompt.get("label") or prompt.get("raw") or "") + PROMPT_SUFFIX
            if isinstance(duplicate.get("id"), str):
                duplicate["id"] = duplicate["id"] + "m"
            extra.append(duplicate)
        prompts.extend(extra)
    _double_stats(document)
    return document


# -- Inspect AI --------------------------------------------------------------------------------

EXTRA_SCORER = "metamorphic_always"


def _sample_key(sample: dict[str, Any]) -> Hashable:
    return json.dumps(sample.get("id"))


def inspect_reorder_samples(document: dict[str, Any]) -> dict[str, Any]:
    """``samples`` reordered (the epochs of one sample keep their order)."""
    document["samples"] = stable_reverse(document["samples"], _sample_key)
    return document


def inspect_reorder_scores(document: dict[str, Any]) -> dict[str, Any]:
    """Each sample's ``scores`` object with its keys in reverse order."""
    for sample in document["samples"]:
        scores = sample.get("scores")
        if isinstance(scores, dict):
            sample["scores"] = dict(reversed(list(scores.items())))
    return document


def scored_samples(*documents: dict[str, Any]) -> set[str]:
    """The sample ids (as JSON) scored in every epoch on every side: where an added scorer
    passes on both sides (on a sample that errored on one side, it is a real new row)."""
    result: set[str] | None = None
    for document in documents:
        scored: set[str] = set()
        unscored: set[str] = set()
        for sample in document["samples"]:
            key = json.dumps(sample.get("id"))
            (scored if sample.get("scores") else unscored).add(key)
        result = scored - unscored if result is None else result & (scored - unscored)
    return result or set()


def inspect_add_scorer(document: dict[str, Any], samples: set[str]) -> dict[str, Any]:
    """A scorer that passes (``"C"``) on every sample of ``samples`` (see
    :func:`scored_samples`), written where Inspect writes a scorer: each sample's ``scores``,
    ``eval.scorers``, ``results.scores`` (accuracy 1.0, stderr 0.0 over those samples) and
    ``reductions``."""
    scored_ids: list[Any] = []
    all_ids: set[str] = set()
    for sample in document["samples"]:
        scores = sample.get("scores")
        all_ids.add(json.dumps(sample.get("id")))
        if isinstance(scores, dict) and scores and json.dumps(sample.get("id")) in samples:
            scores[EXTRA_SCORER] = {
                "value": "C",
                "answer": "",
                "explanation": "metamorphic scorer",
                "history": [],
            }
            if sample.get("id") not in scored_ids:
                scored_ids.append(sample.get("id"))
    scorers = document.get("eval", {}).get("scorers")
    if isinstance(scorers, list):
        scorers.append(
            {
                "name": EXTRA_SCORER,
                "options": {},
                "metrics": [
                    {"name": "inspect_ai/accuracy", "options": {}},
                    {"name": "inspect_ai/stderr", "options": {}},
                ],
                "metadata": {},
            }
        )
    results = document.get("results")
    if isinstance(results, dict) and isinstance(results.get("scores"), list):
        results["scores"].append(
            {
                "name": EXTRA_SCORER,
                "scorer": EXTRA_SCORER,
                "scored_samples": len(scored_ids),
                "unscored_samples": len(all_ids) - len(scored_ids),
                "params": {},
                "metrics": {
                    "accuracy": {"name": "accuracy", "value": 1.0, "params": {}},
                    "stderr": {"name": "stderr", "value": 0.0, "params": {}},
                },
            }
        )
    reductions = document.get("reductions")
    if isinstance(reductions, list):
        reductions.append(
            {
                "scorer": EXTRA_SCORER,
                "samples": [
                    {
                        "value": 1.0,
                        "answer": "",
                        "explanation": "metamorphic scorer",
                        "history": [],
                        "sample_id": sample_id,
                    }
                    for sample_id in scored_ids
                ],
            }
        )
    return document


# -- ZIP (.eval) -------------------------------------------------------------------------------

_LOCAL = b"PK\x03\x04"
_CENTRAL = b"PK\x01\x02"
_END = b"PK\x05\x06"


@dataclass(frozen=True)
class _Member:
    local: bytes
    """The member's local header, data and data descriptor, exactly as stored."""
    central: bytes
    """Its central directory record (the local header offset is rewritten)."""


def reorder_zip_members(data: bytes) -> bytes:
    """The archive with its members in reverse order, each member's bytes (local header,
    compressed data in whatever method, e.g. zstd 93, data descriptor) copied unchanged and
    the central directory rewritten with the new offsets. Needs no codec."""
    archive = zipfile.ZipFile(io.BytesIO(data))
    infos = archive.infolist()
    end = data.rindex(_END)
    (_, _, _, _, count, size, offset, comment_length) = struct.unpack(
        "<4sHHHHIIH", data[end : end + 22]
    )
    assert count == len(infos), "zip64 or multi-disk archives are not handled"
    starts = [*sorted(info.header_offset for info in infos), offset]
    members: list[_Member] = []
    position = offset
    for info in infos:
        assert data[position : position + 4] == _CENTRAL
        name_length, extra_length, comment = struct.unpack(
            "<HHH", data[position + 28 : position + 34]
        )
        record_end = position + 46 + name_length + extra_length + comment
        central = data[position:record_end]
        position = record_end
        local_start = info.header_offset
        local_end = starts[starts.index(local_start) + 1]
        assert data[local_start : local_start + 4] == _LOCAL
        members.append(_Member(data[local_start:local_end], central))
    assert position == offset + size
    out = io.BytesIO()
    out.write(data[: min(starts)])
    records: list[bytes] = []
    for member in reversed(members):
        header_offset = out.tell()
        out.write(member.local)
        records.append(member.central[:42] + struct.pack("<I", header_offset) + member.central[46:])
    directory_offset = out.tell()
    for record in records:
        out.write(record)
    directory_size = out.tell() - directory_offset
    out.write(
        struct.pack(
            "<4sHHHHIIH",
            _END,
            0,
            0,
            len(records),
            len(records),
            directory_size,
            directory_offset,
            comment_length,
        )
    )
    out.write(data[end + 22 : end + 22 + comment_length])
    return out.getvalue()


# -- faithfulness: what a transformation may change ---------------------------------------------
#
# Checks of the rewritten file made without EvalArc, so that a transformation that dropped a
# test, changed an outcome or left a counter wrong fails as a bug of this module.


def _suite_path(parents: dict[ElementTree.Element, ElementTree.Element], element: Any) -> tuple:
    path: list[str | None] = []
    parent = parents.get(element)
    while parent is not None:
        if _tag(parent) == "testsuite":
            path.append(parent.get("name"))
        parent = parents.get(parent)
    return tuple(reversed(path))


def junit_census(root: ElementTree.Element) -> Counter[tuple[Any, ...]]:
    """Every test as (suite path, classname, name, outcome): its outcome children's tags and
    its outcome attributes (ctest's ``status``, node's ``failure``)."""
    parents = {child: parent for parent in root.iter() for child in parent}
    census: Counter[tuple[Any, ...]] = Counter()
    for testcase in all_testcases(root):
        outcome = tuple(_tag(child) for child in testcase if _tag(child) in OUTCOME_TAGS)
        census[
            (
                _suite_path(parents, testcase),
                testcase.get("classname"),
                testcase.get("name"),
                outcome,
                testcase.get("status"),
                testcase.get("failure") is not None,
            )
        ] += 1
    return census


def passes(entry: tuple[Any, ...]) -> bool:
    _, _, _, outcome, status, failure = entry
    return not outcome and status in (None, "run") and not failure


def junit_discrepancies(root: ElementTree.Element) -> Counter[tuple[str, int]]:
    """Every suite counter that disagrees with the tests it holds, as (counter, difference):
    the originals may carry some (stale counters); a transformation must add none."""
    found: Counter[tuple[str, int]] = Counter()
    for suite in root.iter():
        if _tag(suite) not in ("testsuite", "testsuites"):
            continue
        held = all_testcases(suite)
        counts = {
            "tests": len(held),
            "failures": sum(1 for case in held if case.find("failure") is not None),
            "errors": sum(1 for case in held if case.find("error") is not None),
            "skipped": sum(1 for case in held if case.find("skipped") is not None),
        }
        for counter, actual in counts.items():
            value = suite.get(counter)
            if value is not None and int(value) != actual:
                found[(counter, int(value) - actual)] += 1
    held = all_testcases(root)
    actual_totals = {
        "tests": len(held),
        "pass": sum(1 for case in held if not any(_tag(child) in OUTCOME_TAGS for child in case)),
        "suites": sum(1 for element in root.iter() if _tag(element) == "testsuite"),
    }
    for name, comment in _node_comments(root).items():
        if name in actual_totals and comment.text is not None:
            difference = int(comment.text.split()[1]) - actual_totals[name]
            if difference:
                found[(f"<!-- {name} -->", difference)] += 1
    return found


def inserted_suites(data: bytes) -> list[tuple[Any, ...]]:
    """The suites a transformation inserted, as their attributes (counters aside) and their
    tests' attributes: a suite inserted into both sides must be the same test on each."""
    found = []
    for suite in parse_xml(data).iter():
        if _tag(suite) == "testsuite" and suite.get("name") in (OTHER_SUITE, OTHER_PROJECT):
            attributes = sorted((k, v) for k, v in suite.attrib.items() if k not in COUNTERS)
            tests = [sorted(case.attrib.items()) for case in all_testcases(suite)]
            found.append((attributes, tests))
    return found


def junit_faithful(original: bytes, transformed: bytes) -> list[str]:
    before, after = parse_xml(original), parse_xml(transformed)
    census_before, census_after = junit_census(before), junit_census(after)
    problems = []
    lost = census_before - census_after
    if lost:
        problems.append(f"tests lost or changed: {sorted(lost)[:5]}")
    failing_extra = [entry for entry in census_after - census_before if not passes(entry)]
    if failing_extra:
        problems.append(f"inserted tests that do not pass: {failing_extra[:5]}")
    if junit_discrepancies(before) != junit_discrepancies(after):
        problems.append(
            f"suite counters: {junit_discrepancies(before)} -> {junit_discrepancies(after)}"
        )
    return problems


def _declared_verdicts(document: dict[str, Any]) -> list[str]:
    """Disagreements between promptfoo's own figures: ``results.stats`` against the rows, and
    a row's ``success`` against its components (every one must pass for the row to), as
    messages naming the row (a row failed on a test-level ``threshold`` or
    ``assertScoringFunction`` disagrees with its components in the producer's own file; a
    transformation must add no such disagreement, see :func:`promptfoo_faithful`)."""
    rows = _rows(document)
    problems = []
    successes = sum(1 for row in rows if row.get("success") is True)
    errors = sum(1 for row in rows if row.get("failureReason") == 2)
    stats = document["results"].get("stats") or {}
    figures = (stats.get("successes"), stats.get("failures"), stats.get("errors"))
    if figures != (successes, len(rows) - successes - errors, errors):
        problems.append(f"results.stats {figures} for {len(rows)} rows")
    for row in rows:
        components = _components(row)
        if components is not None and row.get("success") != all(c.get("pass") for c in components):
            problems.append("a row's success disagrees with its components")
    return problems


def promptfoo_faithful(original: bytes, transformed: bytes) -> list[str]:
    before, after = json.loads(original), json.loads(transformed)
    declared_before, declared_after = _declared_verdicts(before), _declared_verdicts(after)
    # A row failed on a test-level threshold disagrees with its components in promptfoo's own
    # file; a rewrite may copy such rows (another provider or prompt), never make new ones.
    problems = [text for text in declared_after if text.startswith("results.stats")]
    if declared_after and not declared_before:
        problems.append("a row's success now disagrees with its components")
    verdicts_before = Counter((_row_key(row), row.get("success")) for row in _rows(before))
    verdicts_after = Counter((_row_key(row), row.get("success")) for row in _rows(after))
    lost = verdicts_before - verdicts_after
    if lost:
        problems.append(f"rows lost or changed: {sorted(lost, key=str)[:5]}")
    return problems


def inspect_faithful(original: bytes, transformed: bytes) -> list[str]:
    before, after = json.loads(original), json.loads(transformed)
    problems = []
    scores_after = {
        (json.dumps(sample["id"]), sample.get("epoch")): sample.get("scores") or {}
        for sample in after["samples"]
    }
    for sample in before["samples"]:
        key = (json.dumps(sample["id"]), sample.get("epoch"))
        kept = scores_after.get(key)
        if kept is None:
            problems.append(f"sample {key} lost")
            continue
        for scorer, score in (sample.get("scores") or {}).items():
            if kept.get(scorer) != score:
                problems.append(f"sample {key} score {scorer} changed")
    if len(after["samples"]) != len(before["samples"]):
        problems.append("sample count changed")
    declared = [scorer["name"] for scorer in after["eval"].get("scorers") or []]
    reported = [score["name"] for score in (after.get("results") or {}).get("scores") or []]
    if sorted(declared) != sorted(reported):
        problems.append(f"eval.scorers {declared} but results.scores {reported}")
    return problems


def zip_faithful(original: bytes, transformed: bytes) -> list[str]:
    def members(data: bytes) -> set[tuple[Any, ...]]:
        archive = zipfile.ZipFile(io.BytesIO(data))
        return {
            (info.filename, info.CRC, info.compress_type, info.compress_size, info.file_size)
            for info in archive.infolist()
        }

    before, after = members(original), members(transformed)
    return [] if before == after else [f"members changed: {sorted(before ^ after)[:5]}"]
