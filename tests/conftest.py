"""Shared pytest fixtures, markers and the parallel grouping (tests/README.md explains them).

Fixtures every test module may use:

* ``engine``: the real Docker engine with the local test images (scripts/docker_setup.sh).
  A test that asks for it is marked ``docker``.
* ``browser``: real Chromium driven by Playwright (scripts/browser_setup.sh). A test that asks
  for it is marked ``browser``.
* ``cli``: ``cli("diff", a, b, "--json")`` runs the ``evalarc`` command in-process (Click's
  runner) and returns its result; ``env=`` sets extra environment variables.
* ``corpus``: the folder of real result files.

Under pytest-xdist (``-n``, ``--dist loadgroup``) the tests of a module form one group, so a
module's fixtures are built once, on one worker; every test marked ``docker`` is in the group
``docker`` and every test marked ``browser`` in the group ``browser`` instead, so neither kind of
heavy test runs two at a time and starves the other.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from evalarc.cli import main

# The real-tool corpus committed with the project (tests/corpus/README.md says what is in it).
CORPUS = Path(__file__).resolve().parent / "corpus"

IMAGES = {
    "python": os.environ.get("EVALARC_TEST_IMAGE", "evalarc-python:local"),
    "javascript": os.environ.get("EVALARC_TEST_NODE_IMAGE", "evalarc-node:local"),
}
"""The local images the Docker tests run candidates in (scripts/docker_setup.sh builds them)."""
DOCKER_SETUP_HINT = (
    "run `sudo bash scripts/docker_setup.sh` (starts the engine, builds the local images)"
)
CHROMIUM = Path(os.environ.get("EVALARC_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

collect_ignore = ["corpus"]
"""tests/corpus/ holds the result files of real tools and the sources that produced them (some
with deliberately failing tests): data for the suite, never part of it."""

_GROUP = pytest.StashKey[str]()

Cli = Callable[..., Result]
"""``cli(*args, env=None)``: the ``evalarc`` command run in-process."""

DOCKER_GROUP = "docker"
BROWSER_GROUP = "browser"
HEAVY_FIRST = [
    DOCKER_GROUP,
    BROWSER_GROUP,
    "test_hostile_inputs",
    "test_docs_commands",
    "test_cancel",
    "test_pack_durable_kv_run",
    "test_action",
    "test_fuzz_readers",
    "test_site_verify",
    "test_demo",
    "test_audit",
]
"""Groups handed to the workers first (the longest, measured with ``--durations``), so no long
group starts last and runs alone at the end; the other groups follow in collection order."""


@pytest.fixture(scope="session")
def corpus() -> Path:
    """The reference corpus of real result files made by real tools, inside the clone."""
    assert (CORPUS / "README.md").is_file(), f"the corpus is missing: {CORPUS}"
    return CORPUS


@pytest.fixture(scope="session")
def engine() -> Iterator[Any]:
    """The Docker engine and the test images; their absence fails with the way to fix it."""
    import docker

    try:
        client = docker.from_env(timeout=30)
        client.ping()
    except Exception as error:  # any failure to reach the engine means setup is missing
        pytest.fail(f"no Docker engine ({error}); {DOCKER_SETUP_HINT}", pytrace=False)
    for image in IMAGES.values():
        try:
            client.images.get(image)
        except docker.errors.ImageNotFound:
            pytest.fail(f"Docker image {image} is missing; {DOCKER_SETUP_HINT}", pytrace=False)
    yield client
    client.close()


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Headless Chromium (the system one, or EVALARC_CHROMIUM), one per test process."""
    if not CHROMIUM.exists():
        pytest.fail(f"Chromium is missing at {CHROMIUM}: run `sudo bash scripts/browser_setup.sh`")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("Playwright is missing: pip install -e '.[dev]'")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="session")
def cli() -> Cli:
    """Run ``evalarc ARGS`` in-process; exceptions propagate so a traceback fails the test."""

    def invoke(*args: str | Path, env: dict[str, str] | None = None) -> Result:
        return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False, env=env)

    return invoke


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark tests by the fixtures they use and give each one its xdist group.

    Runs first: ``-m`` selection and xdist's grouping read the marks this adds."""
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "engine" in fixtures:
            item.add_marker(pytest.mark.docker)
        if "browser" in fixtures:
            item.add_marker(pytest.mark.browser)
        if item.get_closest_marker("xdist_group") is not None:
            continue
        if item.get_closest_marker("docker") is not None:
            group = DOCKER_GROUP
        elif item.get_closest_marker("browser") is not None:
            group = BROWSER_GROUP
        else:
            group = item.path.stem
        item.add_marker(pytest.mark.xdist_group(group))
        item.stash[_GROUP] = group
    if not getattr(config.option, "loadgroup", False):
        return
    rank = {group: index for index, group in enumerate(HEAVY_FIRST)}
    # A stable sort: within a group the collection order (module by module) stays as it was.
    items.sort(key=lambda item: rank.get(item.stash.get(_GROUP, ""), len(rank)))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """Under ``--dist loadgroup`` every test must carry its group in its node id (that is how
    pytest-xdist groups); without it every worker would rebuild every module fixture."""
    if node.config.getoption("dist", "no") != "loadgroup":
        return
    lost = [nodeid for nodeid in ids if "@" not in nodeid.rsplit("]", 1)[-1]]
    if lost:
        pytest.exit(
            f"pytest-xdist did not group {len(lost)} tests (first: {lost[0]}); this pytest "
            "breaks --dist loadgroup (pytest-dev/pytest-xdist#1386): pip install -e '.[dev]'",
            returncode=pytest.ExitCode.USAGE_ERROR,
        )


@pytest.fixture(autouse=True)
def _cancelling_signals_restored() -> Iterator[None]:
    """A command run in-process installs its cancel handlers, and one that was cancelled (or
    published its output) sets SIGINT, SIGTERM and SIGHUP to ignored so a second Ctrl-C cannot
    kill it while it exits: put them back after each test, or every later child process of this
    worker would inherit an ignored Ctrl-C."""
    import signal as _signal

    names = ("SIGINT", "SIGTERM", "SIGHUP")
    saved = {name: _signal.getsignal(getattr(_signal, name)) for name in names}
    yield
    for name, handler in saved.items():
        if handler is not None:
            _signal.signal(getattr(_signal, name), handler)
