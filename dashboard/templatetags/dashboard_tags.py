from django import template

register = template.Library()


@register.filter
def pct(value, digits=1):
    """0.8325 -> '83.3 %'; None -> '–'."""
    if value is None or value == "":
        return "–"
    return f"{100 * float(value):.{int(digits)}f} %"


@register.filter
def num(value, digits=3):
    if value is None or value == "":
        return "–"
    return f"{float(value):.{int(digits)}f}"


@register.filter
def pp(value, digits=1):
    """A change of a rate in percentage points: 0.1667 -> '+16.7 pp'."""
    if value is None or value == "":
        return "–"
    return f"{100 * float(value):+.{int(digits)}f} pp"
