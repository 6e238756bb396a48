"""A report page ready to render: the template, its page model, the verdict line and the files
beside it; and the one way a page is rendered, for a report folder and for a site alike."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from evalarc.bundle import EvidenceFolder


@dataclass(frozen=True)
class PageView:
    """One report page, ready to render: the template, its page model and the index line."""

    template: str
    title: str
    verdict: str
    """The page's verdict sentence, repeated on the index."""
    model: object
    files: dict[str, bytes] = field(default_factory=dict)
    """Rendered files beside the page (a diff's evidence chunks), by path in the bundle."""


PageBuilder = Callable[[EvidenceFolder, dict[str, Any], dict[str, Any]], PageView]


def render_view(view: PageView, *, home: str | None) -> str:
    """The page's HTML; ``home`` links back to a site's index (None: a report folder's own
    page, which has no site around it)."""
    # jinja2 is loaded only when a page is rendered: ``evalarc diff`` without --output (the CI
    # gate) never needs it, and it costs about 8 MB and 25 ms to import.
    from evalarc.pages.render import render_page

    return render_page(
        view.template,
        title=view.title,
        home=home,
        page=view.model,
        dynamic_scripts=bool(view.files),
    )
