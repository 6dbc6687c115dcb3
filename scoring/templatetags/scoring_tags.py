from django import template

register = template.Library()


@register.filter
def pct(value):
    """0.4567 → "45.7 %"; None → "–"."""
    if value is None or value == "":
        return "–"
    return f"{100 * float(value):.1f} %"


@register.filter
def rate_of(cells, key):
    """The rate of `cells[key]` (a correctness cell), or None."""
    cell = (cells or {}).get(key) or {}
    return cell.get("rate")


@register.filter
def pvalue(value):
    if value is None:
        return "–"
    return "< 0.001" if value < 0.001 else f"{value:.3f}"
