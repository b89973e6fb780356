"""Sphinx configuration of the kstep course site; `make course` builds it into build/course.

Everything the site loads is in its own folder: BokehJS in _static/bokeh (kstep.views.site), the
theme's assets, Sphinx's search index.  Nothing comes from a CDN, so it works offline, from
file:// or a local server.
"""

from kstep import __version__

project = "kstep"
author = "the kstep authors"
copyright = "the kstep authors, GPL-2.0-only"
release = version = __version__

extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinxarg.ext", "kstep.views.site"]
exclude_patterns = ["**.ipynb_checkpoints"]
myst_heading_anchors = 3
smartquotes = False  # scenario texts and step labels appear exactly as the library writes them

# Notebooks run at every build that changed them (jupyter-cache keeps the rest); a cell that raises
# fails the build.  make course points nb_execution_cache_path at a cache per kstep source digest.
nb_execution_mode = "cache"
nb_execution_raise_on_error = True
nb_execution_timeout = 600  # seconds per cell: a guard against a hung kernel only
# A cell's printed lines reach the page as one block: how the kernel happened to split them into messages
# changed from one build to the next.
nb_merge_streams = True
nb_render_plugin = "kstep-site"  # kstep.views.site.outputs.SiteRenderer: Bokeh and widget outputs
# The default loads require.js and the widget manager from CDNs; the site shows no widgets.
nb_ipywidgets_js = {}

# MathJax would come from a CDN: no math renderer, and math on a page fails the build.
html_math_renderer = "kstep-none"

autodoc_member_order = "bysource"
autodoc_typehints = "none"

html_theme = "sphinx_book_theme"
html_title = "kstep"
html_static_path = ["_static"]
templates_path = ["_templates"]  # search-button-field.html: the theme's search button, named by its text
html_css_files = ["kstep.css"]
html_copy_source = True  # the notebooks' download button offers the .ipynb from _sources
# Result summaries are fetch()ed from _sources, which a browser refuses from file://.
html_show_search_summary = False
html_context = {"default_mode": "light"}  # else pydata-sphinx-theme logs an error on a first visit
html_theme_options = {
    "use_download_button": True,
    "use_fullscreen_button": False,
    "use_repository_button": False,
    "show_toc_level": 2,
    "navigation_with_keys": False,
}
