"""Held-out splits (loading, partition, generalization states) and the harness leakage scan."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from evalarc.canonical import sha256_bytes
from evalarc.errors import InputError, UsageError
from evalarc.formats.harness import HarnessFile, collect_harness
from evalarc.formats.model import Attempt, Material, Run, Source
from evalarc.formats.split import CaseSplit, load_split
from evalarc.review.leakage import MAX_HITS, normalize_text, scan_leakage
from evalarc.review.split import EXPLANATIONS, partition, review_generalization

_CODES = {"C": True, "I": False, None: None}


def make_run(
    cases: dict[str, list[str | None]], material: dict[str, list[Material]] | None = None
) -> Run:
    """One check ``k`` per case with the given attempt codes."""
    return Run(
        format="inspect",
        source=Source("r.json", "0" * 64),
        threshold=1.0,
        cases={
            case: {"k": [Attempt(_CODES[code]) for code in codes]} for case, codes in cases.items()
        },
        material=material or {},
    )


def split_of(*entries: str) -> CaseSplit:
    return CaseSplit(held_out=entries, description=None, source=Source("split.json", "1" * 64))


def write_split(tmp_path: Path, document: Any, name: str = "split.json") -> Path:
    path = tmp_path / name
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return path


# -- load_split -------------------------------------------------------------------------------


def test_load_split_valid(tmp_path: Path) -> None:
    document = {
        "schema_version": "evalarc.case-split.v1",
        "held_out": ["status-*", "address-change"],
        "description": "unseen",
    }
    path = write_split(tmp_path, document)
    split = load_split(path)
    assert split.held_out == ("status-*", "address-change")
    assert split.description == "unseen"
    assert split.source == Source("split.json", sha256_bytes(path.read_bytes()))
    minimal = write_split(
        tmp_path, {"schema_version": "evalarc.case-split.v1", "held_out": ["a"]}, "min.json"
    )
    assert load_split(minimal).description is None


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"schema_version": "evalarc.case-split.v1", "held_out": ["a"], "x": 1}, "unknown fields"),
        ({"schema_version": "evalarc.case-split.v2", "held_out": ["a"]}, "schema_version"),
        ({"held_out": ["a"]}, "schema_version"),
        ({"schema_version": "evalarc.case-split.v1", "held_out": []}, "held_out must list"),
        ({"schema_version": "evalarc.case-split.v1", "held_out": [""]}, "held_out must list"),
        ({"schema_version": "evalarc.case-split.v1", "held_out": [3]}, "held_out must list"),
        ({"schema_version": "evalarc.case-split.v1", "held_out": "a"}, "held_out must list"),
        ({"schema_version": "evalarc.case-split.v1", "held_out": ["a", "a"]}, "twice"),
        (
            {"schema_version": "evalarc.case-split.v1", "held_out": ["a"], "description": 5},
            "description",
        ),
        ([1, 2], "JSON object"),
        (
            '{"schema_version": "evalarc.case-split.v1", "held_out": ["a"], "held_out": ["b"]}',
            "duplicate key",
        ),
        ("{not json", "not valid JSON"),
    ],
)
def test_load_split_rejects(tmp_path: Path, document: Any, message: str) -> None:
    path = write_split(tmp_path, document, "bad-split.json")
    with pytest.raises(InputError, match=message) as caught:
        load_split(path)
    assert "bad-split.json" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_load_split_limits(tmp_path: Path) -> None:
    too_many = {
        "schema_version": "evalarc.case-split.v1",
        "held_out": [f"c{index}" for index in range(10_001)],
    }
    with pytest.raises(InputError, match="held_out must list"):
        load_split(write_split(tmp_path, too_many))
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (4 * 1024 * 1024 + 1))
    with pytest.raises(InputError, match=r"big\.json exceeds"):
        load_split(big)
    with pytest.raises(InputError, match="does not exist"):
        load_split(tmp_path / "missing.json")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InputError, match=r"deep\.json is not valid JSON"):
        load_split(deep)
    not_utf8 = tmp_path / "latin.json"
    not_utf8.write_bytes(b'{"held_out": ["caf\xe9"]}')
    with pytest.raises(InputError, match=r"latin\.json is not valid JSON"):
        load_split(not_utf8)


# -- partition --------------------------------------------------------------------------------


def test_partition_exact_and_globs() -> None:
    cases = ["status-open", "status-missing", "Status-x", "address-change", "refund-1", "a[1]"]
    held, tuning = partition(split_of("status-*", "address-change", "a[[]1]"), cases)
    assert held == ["a[1]", "address-change", "status-missing", "status-open"]
    assert tuning == ["Status-x", "refund-1"]  # globs are case-sensitive
    held, _ = partition(split_of("refund-?"), cases)
    assert held == ["refund-1"]


def test_partition_errors() -> None:
    cases = ["a", "b"]
    with pytest.raises(InputError, match="'zzz' matches no recorded case"):
        partition(split_of("a", "zzz"), cases)
    with pytest.raises(InputError, match="'q\\*' matches no recorded case"):
        partition(split_of("a*", "q*"), cases)
    with pytest.raises(InputError, match="every case is held out"):
        partition(split_of("a", "b"), cases)
    with pytest.raises(InputError, match=r"split\.json"):
        partition(split_of("*"), cases)


def test_partition_many_globs_each_must_match() -> None:
    cases = [f"case-{index}" for index in range(300)]
    globs = tuple(f"case-{index}*" for index in range(1, 100))
    held, tuning = partition(split_of(*globs), cases)
    # case-1* covers case-1, case-10..19, case-100..199; glob case-10* matches cases that
    # case-1* also matched, and must still count as matching
    assert "case-150" in held and "case-0" in tuning
    with pytest.raises(InputError, match="'nope\\*'"):
        partition(split_of(*globs, "nope*"), cases)


# -- generalization ---------------------------------------------------------------------------


def _rows(*blocking_cases: str) -> list[dict[str, Any]]:
    return [{"case_id": case, "check": "k", "kind": "regressed"} for case in blocking_cases]


def test_generalizes_and_fields() -> None:
    base = make_run({"h1": ["I"] * 10, "h2": ["I"] * 10, "t1": ["C", "I"]})
    cur = make_run({"h1": ["C"] * 10, "h2": ["C"] * 10, "t1": ["C", "I"]})
    review = review_generalization([], base, cur, split_of("h*"))
    assert review["state"] == "generalizes"
    assert review["explanation"] == EXPLANATIONS["generalizes"]
    assert list(review) == ["split", "partitions", "state", "explanation", "scope"]
    assert review["split"] == {
        "source": {"name": "split.json", "sha256": "1" * 64},
        "description": None,
        "entries": ["h*"],
        "held_out_cases": ["h1", "h2"],
    }
    held = review["partitions"]["held_out"]
    assert list(held) == [
        "cases",
        "baseline",
        "current",
        "delta",
        "within_sampling_noise",
        "improved_beyond_noise",
        "blocking_changes",
    ]
    assert held["cases"] == 2
    assert held["baseline"] == {"passed": 0, "assessed": 20, "attempts": 20, "pass_rate": 0.0}
    assert held["current"]["pass_rate"] == 1.0
    assert held["delta"] == 1.0
    assert held["within_sampling_noise"] is False and held["improved_beyond_noise"] is True
    tuning = review["partitions"]["tuning"]
    assert tuning["delta"] == 0.0 and tuning["improved_beyond_noise"] is False


def test_state_precedence() -> None:
    big_gain_base = {"h1": ["I"] * 10, "t1": ["I"] * 10}
    big_gain_cur = {"h1": ["C"] * 10, "t1": ["C"] * 10}
    split = split_of("h1")
    # a held-out blocking row beats a held-out gain beyond noise
    state = review_generalization(
        _rows("h1"), make_run(big_gain_base), make_run(big_gain_cur), split
    )["state"]
    assert state == "held_out_regressions"
    # tuning blocking rows do not make held-out regressions
    review = review_generalization(
        _rows("t1"), make_run(big_gain_base), make_run(big_gain_cur), split
    )
    assert review["state"] == "generalizes"
    assert review["partitions"]["tuning"]["blocking_changes"] == 1
    # tuning beyond noise, held out flat -> overfitting signal
    state = review_generalization(
        [],
        make_run({"h1": ["C", "I"], "t1": ["I"] * 10}),
        make_run({"h1": ["C", "I"], "t1": ["C"] * 10}),
        split,
    )["state"]
    assert state == "overfitting_signal"
    # held-out up within noise
    state = review_generalization(
        [],
        make_run({"h1": ["C", "I"], "t1": ["C"]}),
        make_run({"h1": ["C", "C"], "t1": ["C"]}),
        split,
    )["state"]
    assert state == "held_out_gain_within_noise"
    # nothing measurable, including an undefined (unassessed) held-out rate
    state = review_generalization(
        [], make_run({"h1": [None], "t1": ["C"]}), make_run({"h1": [None], "t1": ["C"]}), split
    )
    assert state["state"] == "no_measurable_gain"
    assert state["partitions"]["held_out"]["delta"] is None
    # plain Wilson overlap, no variation precondition: n = 0 overlaps everything
    assert state["partitions"]["held_out"]["within_sampling_noise"] is True


def test_partition_pools_cases_present_on_one_side_only() -> None:
    base = make_run({"h1": ["C"], "t1": ["C"]})
    cur = make_run({"h1": ["C"], "h2": ["I", "I"], "t1": ["C"]})
    review = review_generalization([], base, cur, split_of("h*"))
    held = review["partitions"]["held_out"]
    assert held["cases"] == 2
    assert held["baseline"]["attempts"] == 1 and held["current"]["attempts"] == 3


# -- leakage scan -----------------------------------------------------------------------------


def harness(label: str, text: str | bytes) -> HarnessFile:
    data = text.encode() if isinstance(text, str) else text
    return HarnessFile(label=label, data=data, sha256=sha256_bytes(data))


def leak_run(material: dict[str, list[tuple[str, str]]]) -> Run:
    texts: dict[str, list[Material]] = {}
    for case, items in material.items():
        texts[case] = [
            Material("input" if role == "input" else "expected", text) for role, text in items
        ]
    return make_run({case: ["C"] for case in material}, texts)


def test_normalize_text() -> None:
    assert normalize_text("  Hello\t\n  WORLD  ß ") == "hello world ss"


def test_leakage_hits_lines_and_spanning() -> None:
    run = leak_run(
        {
            "c1": [("input", "What is the capital of France?")],
            "c2": [("expected", "The answer spans two lines")],
            "c3": [("input", "short")],
        }
    )
    text = "intro\n\nQ: what   is the CAPITAL of france?\nThe answer spans\ntwo lines\n"
    result = scan_leakage([run], [harness("h/prompt.md", text)], 12, None)
    assert list(result) == [
        "files_scanned",
        "materials_considered",
        "min_chars",
        "hits",
        "held_out_hits",
        "truncated",
        "scope",
    ]
    assert result["materials_considered"] == 2  # "short" is under 12 characters
    assert result["files_scanned"] == [
        {"path": "h/prompt.md", "sha256": sha256_bytes(text.encode()), "bytes": len(text)}
    ]
    hits = {hit["case_id"]: hit for hit in result["hits"]}
    assert hits["c1"]["line"] == 3
    assert hits["c2"]["line"] is None  # the match spans two lines
    assert hits["c1"] == {
        "file": "h/prompt.md",
        "file_sha256": sha256_bytes(text.encode()),
        "line": 3,
        "case_id": "c1",
        "partition": None,
        "role": "input",
        "text": "What is the capital of France?",
    }
    assert result["held_out_hits"] == 0 and result["truncated"] is False


def test_leakage_first_line_after_a_spanning_match() -> None:
    run = leak_run({"c": [("input", "alpha beta gamma delta")]})
    text = "alpha beta\ngamma delta\nxx alpha beta gamma delta yy\n"
    hit = scan_leakage([run], [harness("f", text)], 12, None)["hits"][0]
    assert hit["line"] == 3


def test_leakage_one_hit_per_owner_and_dedup_across_runs() -> None:
    material = {"c": [("input", "the same case text"), ("input", "the same case text")]}
    runs = [leak_run(material), leak_run(material)]
    result = scan_leakage(runs, [harness("f", "THE SAME CASE TEXT")], 12, None)
    assert result["materials_considered"] == 1
    assert len(result["hits"]) == 1
    # the same text owned by two cases is two hits
    two = leak_run({"a": [("input", "the same case text")], "b": [("input", "the same case text")]})
    assert len(scan_leakage([two], [harness("f", "the same case text")], 12, None)["hits"]) == 2


def test_leakage_held_out_first_and_partition() -> None:
    run = leak_run(
        {
            "tune": [("input", "tuning case words here")],
            "held": [("expected", "held out answer text")],
        }
    )
    files = [
        harness("a.md", "tuning case words here"),
        harness("b.md", "\n\nheld out answer text"),
    ]
    result = scan_leakage([run], files, 12, frozenset({"held"}))
    assert [(h["case_id"], h["partition"], h["file"], h["line"]) for h in result["hits"]] == [
        ("held", "held_out", "b.md", 3),
        ("tune", "tuning", "a.md", 1),
    ]
    assert result["held_out_hits"] == 1


def test_leakage_skips_non_utf8_and_min_chars() -> None:
    run = leak_run({"c": [("input", "abcd efgh ijkl")]})
    files = [harness("bin", b"\xff\xfeabcd efgh ijkl"), harness("ok", "ABCD EFGH IJKL")]
    result = scan_leakage([run], files, 12, None)
    assert [entry["path"] for entry in result["files_scanned"]] == ["ok"]
    assert len(result["hits"]) == 1
    assert scan_leakage([run], files, 15, None)["materials_considered"] == 0
    with pytest.raises(UsageError, match="at least 4"):
        scan_leakage([run], files, 3, None)


def test_leakage_cap_and_text_cut() -> None:
    long_text = "x" * 170
    material = {
        f"case-{index:03d}": [("input", f"needle number {index:03d}")] for index in range(250)
    }
    material["long"] = [("expected", long_text)]
    run = leak_run(material)
    body = "\n".join(f"needle number {index:03d}" for index in range(250)) + "\n" + long_text
    result = scan_leakage([run], [harness("f", body)], 12, frozenset({"case-249"}))
    assert len(result["hits"]) == MAX_HITS
    assert result["truncated"] is True
    assert result["hits"][0]["case_id"] == "case-249"  # held-out first
    assert result["hits"][1]["line"] == 1
    full = scan_leakage([run], [harness("f", long_text)], 12, None)
    assert full["hits"][0]["text"] == "x" * 160 + "…"
    assert full["truncated"] is False


def test_leakage_template_needles_use_distinct_anchors() -> None:
    # Hundreds of needles sharing one long template prefix (the anchor index path).
    count = 600
    material = {
        f"c{index}": [("input", f"What is the capital city of country number {index}?")]
        for index in range(count)
    }
    run = leak_run(material)
    body = "noise\n" + "\n".join(
        f"WHAT is the capital city of country number {index}?" for index in range(0, count, 7)
    )
    result = scan_leakage([run], [harness("f", body)], 12, None)
    found = sorted(hit["case_id"] for hit in result["hits"])
    assert found == sorted(f"c{index}" for index in range(0, count, 7))
    lines = {hit["case_id"]: hit["line"] for hit in result["hits"]}
    assert lines["c0"] == 2 and lines["c7"] == 3 and lines["c595"] == 2 + 595 // 7


def _naive_hits(
    material: dict[str, list[tuple[str, str]]], text: str, min_chars: int
) -> list[tuple[str, str, int | None]]:
    """The scan rule written out plainly: normalized containment, first whole line."""
    whole = normalize_text(text)
    lines = [normalize_text(line) for line in text.splitlines()]
    hits = []
    for case_id, items in material.items():
        for role, original in dict.fromkeys(items):
            needle = normalize_text(original)
            if len(needle) < min_chars or needle not in whole:
                continue
            line = next((n for n, body in enumerate(lines, 1) if needle in body), None)
            hits.append((case_id, role, line))
    return sorted(hits)


@pytest.mark.parametrize("direct_limit", [0, 10**9])
def test_leakage_search_paths_agree_with_plain_rule(
    direct_limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    import random

    from evalarc.review import leakage

    monkeypatch.setattr(leakage, "_DIRECT_SEARCH_NEEDLES", direct_limit)
    generator = random.Random(7)
    words = ["ab", "Ba", "abab", "b", "AAB", "ba ab"]
    for _ in range(40):
        material = {
            f"c{index}": [
                ("input", " ".join(generator.choice(words) for _ in range(generator.randint(2, 6))))
            ]
            for index in range(generator.randint(1, 30))
        }
        text = "".join(generator.choice([*words, " ", "\n", "\t", "\r\n"]) for _ in range(400))
        result = scan_leakage([leak_run(material)], [harness("f", text)], 4, None)
        got = sorted((hit["case_id"], hit["role"], hit["line"]) for hit in result["hits"])
        assert got == _naive_hits(material, text, 4)[:MAX_HITS]


# -- harness collection -----------------------------------------------------------------------


def test_collect_harness_walk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    root = Path("harness")
    (root / "a").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "a" / "x.md").write_text("x")
    (root / "a.txt").write_text("a")
    (root / "b.md").write_text("b")
    (root / ".hidden").write_text("h")
    (root / ".git" / "config").write_text("c")
    (root / "big.bin").write_bytes(b"0" * (2 * 1024 * 1024 + 1))
    os.symlink(tmp_path / "harness" / "b.md", root / "link.md")
    single = Path("prompt.md")
    single.write_text("p")
    files = collect_harness([root, single, Path("harness/b.md")])
    assert [item.label for item in files] == [
        "harness/a/x.md",
        "harness/a.txt",
        "harness/b.md",
        "prompt.md",
    ]
    assert files[0].data == b"x" and files[0].sha256 == sha256_bytes(b"x")


def test_collect_harness_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        collect_harness([tmp_path / "missing"])
    target = tmp_path / "real.md"
    target.write_text("r")
    link = tmp_path / "link"
    os.symlink(target, link)
    with pytest.raises(InputError, match="symbolic link"):
        collect_harness([link])
    many = tmp_path / "many"
    many.mkdir()
    for index in range(2_001):
        (many / f"{index:04d}.txt").write_text("")
    with pytest.raises(InputError, match="more than 2,000 files"):
        collect_harness([many])


def test_collect_harness_total_limit(tmp_path: Path) -> None:
    folder = tmp_path / "big"
    folder.mkdir()
    for index in range(9):
        (folder / f"{index}.txt").write_bytes(b"a" * (2 * 1024 * 1024 - 1))
    with pytest.raises(InputError, match="16 MiB"):
        collect_harness([folder])


# -- hidden copies: zero-width and fullwidth characters --------------------------------------------

EXAMPLE = Path(__file__).resolve().parents[1] / "recordings" / "examples" / "results-diff"


def _fullwidth(text: str) -> str:
    """ASCII letters and digits as their fullwidth forms (U+FF01..U+FF5E)."""
    return "".join(
        chr(ord(char) + 0xFEE0) if char.isalnum() and char.isascii() else char for char in text
    )


def _zero_width(text: str) -> str:
    """A zero-width space after every letter, a soft hyphen after every space: invisible."""
    return "".join(
        char + ("\u200b" if char.isalpha() else "\u00ad" if char == " " else "") for char in text
    )


@pytest.mark.parametrize(
    "hide", [_fullwidth, _zero_width, lambda t: "\ufeff" + _fullwidth(t.replace("e", "e\u2060"))]
)
def test_a_copy_hidden_with_invisible_or_fullwidth_characters_is_still_found(
    hide: Any, tmp_path: Path
) -> None:
    # Issue 24 item 10: a zero-width or fullwidth character hid a leakage hit. The real example
    # pair and its harness, whose worked examples quote case inputs, with those lines disguised.
    from evalarc.formats import load_results

    inspect = EXAMPLE / "inspect"
    original = (inspect / "harness" / "system-prompt.md").read_text(encoding="utf-8")
    lines = original.splitlines(keepends=True)
    disguised = "".join(hide(line) if line.startswith("- Ticket") else line for line in lines)
    assert disguised != original
    for line in disguised.splitlines():
        if line.startswith(("- Ticket", "\ufeff")):
            assert "Order 4242" not in line and "order 9999" not in line.casefold()
    runs = [load_results(inspect / name, "auto", 1.0) for name in ("baseline.eval", "current.eval")]
    plain = scan_leakage(runs, [harness("system-prompt.md", original)], 12, None)
    hidden = scan_leakage(runs, [harness("system-prompt.md", disguised)], 12, None)
    assert len(plain["hits"]) >= 2
    found = [(hit["case_id"], hit["line"], hit["role"]) for hit in hidden["hits"]]
    assert found == [(hit["case_id"], hit["line"], hit["role"]) for hit in plain["hits"]]


def test_normalize_text_folds_compatibility_forms_and_drops_format_characters() -> None:
    assert normalize_text("Ｃａｐｉｔａｌ\u200b of\u00ad Fr\u200dance\ufeff") == "capital of france"
    assert normalize_text("ﬁle\u2060 Ⅻ") == "file xii"
    assert normalize_text("plain ascii") == "plain ascii"
