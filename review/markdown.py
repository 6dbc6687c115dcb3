"""Guidelines' Markdown to safe HTML: markdown-it-py (CommonMark, raw HTML off) and then
nh3 (Ammonia) with a small allow-list, so staff text can never inject script or styles."""
import nh3
from markdown_it import MarkdownIt

_md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")

ALLOWED_TAGS = {
    "p", "br", "hr", "em", "strong", "code", "pre", "blockquote", "ul", "ol", "li",
    "h1", "h2", "h3", "h4", "a", "table", "thead", "tbody", "tr", "th", "td",
}
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}}


def render_markdown(text: str) -> str:
    """Safe HTML of `text` (Markdown)."""
    html = _md.render(text or "")
    return nh3.clean(html, tags=ALLOWED_TAGS, attributes=ALLOWED_ATTRIBUTES, url_schemes={"http", "https", "mailto"},
                     link_rel="noopener noreferrer nofollow")
