from django import template

from .. import selectors

register = template.Library()


@register.inclusion_tag("review/_guidelines.html")
def guidelines_dialog(batch, progress):
    """The batch's guidelines on the audit page: open before the verifier's first item."""
    return {
        "batch": batch,
        "guideline": selectors.guideline_for(batch=batch),
        "show_guidelines": not (progress or {}).get("done"),
    }


@register.filter
def pct(value, digits=0):
    if not isinstance(value, (int, float)):
        return "–"
    return f"{100 * value:.{int(digits)}f} %"
