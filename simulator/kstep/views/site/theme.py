"""What the site's theme (sphinx-book-theme on pydata-sphinx-theme) leaves out for a screen reader.

The sidebar's expand/collapse toggles are ``<summary>`` elements that hold only a chevron icon, so a
screen reader announces a nameless control beside each chapter: each gets a name from the page it
expands.  (docs/_templates/search-button-field.html is the other half: the search button is named by
its own text.)
"""

from __future__ import annotations


def name_toggles(app, pagename, templatename, context, doctree) -> None:
    """html-page-context, after the theme's: the sidebar's toctree, with a name on every nameless toggle."""
    make = context.get("generate_toctree_html")
    if make is None:
        return

    def named(*args, **kwargs):
        soup = make(*args, **kwargs)
        for summary in soup.select("li.has-children > details > summary"):
            link = summary.parent.parent.find("a", recursive=False)
            if not summary.get_text(strip=True) and link is not None:
                summary["aria-label"] = f"pages under {link.get_text(' ', strip=True)}"
        return soup

    context["generate_toctree_html"] = named
