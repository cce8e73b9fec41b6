"""The dashboard's menu: which pages draw which method's results (the engine names no page).

Each registered method (:func:`biascore.methods.discover`) may have pages here; the menu lists them in the
registry's order, a page once even when it draws several methods. A method without a page still runs from
the CLI, the Python API and sweeps; adding a page for it is one file under views/ plus one line here.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Page:
    """A dashboard page: file under views/, menu title and icon."""

    path: str
    title: str
    icon: str


#: method name → the pages that draw its results, in menu order
PAGES: dict[str, tuple[Page, ...]] = {
    "attribution": (Page("views/overview.py", "Overview", "📊"),
                    Page("views/token_attributions.py", "Token attributions", "🔎"),
                    Page("views/try_pair.py", "Try a pair", "✍️"),
                    Page("views/translation_review.py", "Translation review", "🇵🇭")),
    "words": (Page("views/words.py", "Words", "🔤"),),
    "fields": (Page("views/semantic_fields.py", "Semantic fields", "🏷️"),),
    "heads": (Page("views/attention_heads.py", "Attention heads", "🧠"),),
    "heads-masking": (Page("views/attention_heads.py", "Attention heads", "🧠"),),
    "heads-counter": (Page("views/attention_heads.py", "Attention heads", "🧠"),),
    "labdet": (Page("views/nationality.py", "Nationality (LABDet)", "🌍"),),
    "seat": (Page("views/association_tests.py", "Association tests", "📐"),),
    "ceat": (Page("views/association_tests.py", "Association tests", "📐"),),
    "logprob": (Page("views/association_tests.py", "Association tests", "📐"),),
}


def menu_pages() -> list[Page]:
    """The pages of the registered methods, in registry order, each once."""
    from biascore.methods import discover

    seen: dict[str, Page] = {}
    for method in discover():
        for page in PAGES.get(method.name, ()):
            seen.setdefault(page.path, page)
    return list(seen.values())
