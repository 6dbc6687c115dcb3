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


@register.inclusion_tag("review/_flag.html", takes_context=True)
def flag_box(context, batch, claim):
    """The flag box under the item in hand, showing back the verifier's own flag on the item
    (a reload keeps it: the flag is read from the database, not from the last response)."""
    request = context["request"]
    return {
        "batch": batch,
        "flag_claim": str(claim.pk),
        "flagged": selectors.flag_of(verifier=request.user, item_id=claim.item_id),
        "csrf_token": context.get("csrf_token"),
    }


@register.filter
def pct(value, digits=0):
    if not isinstance(value, (int, float)):
        return "–"
    return f"{100 * value:.{int(digits)}f} %"
