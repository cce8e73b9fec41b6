"""The dashboard's menu: which pages draw which method's results (the engine names no page).

Each registered method (:func:`biascore.api.discover`) is on the menu, in the registry's order: through
its bespoke pages listed here (a page once even when it draws several methods), or else through a page
generated from its contract (:mod:`views.kit.generated`), so a new method folder is on the dashboard with no view
code. A bespoke page is one file under views/ plus one line here.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from biascore import api

#: the menu icon of a generated page
GENERATED_ICON = "🧩"


@dataclass(frozen=True)
class Page:
    """A dashboard page: file under views/ (None for a generated page), menu title and icon, and for a
    generated page the method it draws."""

    path: str | None
    title: str
    icon: str
    method: str | None = None

    @property
    def url_path(self) -> str:
        """The page's address (``/overview``; a generated page: the method's name)."""
        return Path(self.path).stem if self.path else str(self.method)


#: method name → the pages that draw its results, in menu order
PAGES: dict[str, tuple[Page, ...]] = {
    "attribution": (Page("views/pages/overview.py", "Overview", "📊"),
                    Page("views/pages/token_attributions.py", "Token attributions", "🔎"),
                    Page("views/pages/try_pair.py", "Try a pair", "✍️"),
                    Page("views/pages/translation_review.py", "Translation review", "🇵🇭"),
                    Page("views/pages/across_languages.py", "Across languages", "🌐")),
    "attribution-paired": (Page("views/pages/overview.py", "Overview", "📊"),),
    "words": (Page("views/pages/words.py", "Words", "🔤"),),
    "fields": (Page("views/pages/semantic_fields.py", "Semantic fields", "🏷️"),),
    **dict.fromkeys(("heads", "heads-masking", "heads-counter", "heads-attention"),
                    (Page("views/pages/attention_heads.py", "Attention heads", "🧠"),)),
    "labdet": (Page("views/pages/nationality.py", "Nationality (LABDet)", "🌍"),),
    **dict.fromkeys(("seat", "ceat", "logprob"), (Page("views/pages/association_tests.py", "Association tests", "📐"),)),
}


def menu_pages() -> list[Page]:
    """The pages of the registered methods, in registry order, each once; a generated page for a method that
    no bespoke page draws."""
    seen: dict[str, Page] = {}
    for method in api.discover():
        for page in PAGES.get(method.name) or (Page(None, method.name, GENERATED_ICON, method.name),):
            seen.setdefault(page.url_path, page)
    return list(seen.values())
