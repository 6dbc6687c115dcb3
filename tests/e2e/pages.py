"""What the browser tests do to a page beyond Playwright's own steps."""


def reveal(page, selector: str) -> None:
    """Scroll the section `selector` into view, so that one loading when shown (htmx `revealed`)
    loads. Such a section is swapped whole (outerHTML) once loaded, possibly while Playwright still
    holds it (`scroll_into_view_if_needed`: "Element is not attached to the DOM"), so it is found
    and scrolled to by one script inside the page."""
    page.eval_on_selector(selector, "section => section.scrollIntoView()")
