from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe

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


@register.simple_tag
def pair_matrix_rows(matrix):
    """The body of the verifier × verifier heat map, written here rather than in the template
    (a page of 50 verifiers is 2,500 cells: the template engine took ~0.2 ms a cell). Each cell
    says its share in words and numbers; the colour (`--rate`) is a second cue, not the only one."""
    rows = []
    for r in matrix:
        me = escape(r["username"])
        cells = [f'<tr data-verifier="{me}"><th scope="row">{me}</th>']
        for c in r["cells"]:
            if c["self"]:
                cells.append(f'<td class="self" aria-label="{me} with themself">—</td>')
            elif c["n"]:
                rate, n = c["rate"], c["n"]
                share = pct(rate)
                low = ' class="lowpair"' if rate < 0.5 else ""
                cells.append(f'<td style="--rate: {rate:.2f}"{low}><strong>{share}</strong><br><small>{n}</small></td>')
            else:
                cells.append('<td class="none"><span class="muted">·</span></td>')
        cells.append("</tr>")
        rows.append("".join(cells))
    return mark_safe("\n".join(rows))  # every name above is escaped


@register.simple_tag
def verifier_rows(verifiers, weeks):
    """The rows of the verifier table (as `pair_matrix_rows`: written here, not cell by cell in the template)."""
    if not verifiers:
        return mark_safe(f'<tr><td colspan="{len(weeks) + 6}">No judgment matches.</td></tr>')
    rows = []
    for v in verifiers:
        name = escape(v["username"])
        low = ' class="low"' if v["consensus"] is not None and v["consensus"] < 0.6 else ""
        median = "–" if v["median_seconds"] is None else f"{v['median_seconds']:.0f}"
        cells = [f'<tr data-verifier="{name}"><td>{name}</td><td>{v["judgments"]}</td>',
                 f'<td{low}><strong>{pct(v["consensus"])}</strong></td><td>{pct(v["pairwise"])}</td>',
                 f'<td>{pct(v["ds_accuracy"])}</td><td>{median}</td>']
        for w in v["weekly"]:
            if w["n"]:
                share = pct(w["rate"])
                cells.append(f'<td class="week"><span class="bar" style="--rate: {w["rate"]:.2f}" title="{share} of {w["n"]}"></span>'
                             f'{share}<br><span class="muted">{w["n"]}</span></td>')
            else:
                cells.append('<td class="week"><span class="muted">–</span></td>')
        cells.append("</tr>")
        rows.append("".join(cells))
    return mark_safe("\n".join(rows))  # every name above is escaped
