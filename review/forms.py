from django import forms

from annotation.models import DOMAINS, Attribute, Batch, Task, Variant

from .models import Decision, FlagReason


class FlagForm(forms.Form):
    claim = forms.UUIDField(widget=forms.HiddenInput)
    reason = forms.ChoiceField(choices=FlagReason.choices, widget=forms.RadioSelect)
    comment = forms.CharField(required=False, max_length=5000, widget=forms.Textarea(attrs={"rows": 2}))


class FlagHandleForm(forms.Form):
    status = forms.ChoiceField(choices=[("resolved", "Resolve"), ("dismissed", "Dismiss")])
    note = forms.CharField(required=False, max_length=5000)


class AdjudicationForm(forms.Form):
    decision = forms.ChoiceField(choices=Decision.choices, widget=forms.RadioSelect)
    reason = forms.CharField(max_length=5000, widget=forms.Textarea(attrs={"rows": 2}))


# --- issue 23: the item list's filters, shared by the page and the API (h3) ---------------------

YES_NO = [("yes", "yes"), ("no", "no")]
DECIDED = [("yes", "decided"), ("no", "not decided"), ("keep", "kept"), ("drop", "dropped")]
ITEM_SORTS = ("posterior", "agreement", "judgments", "flags", "decision", "item")


class ItemFilterForm(forms.Form):
    """The item list's filters, sort and page (a keyset cursor), as query parameters. The page
    and `GET /api/v1/items/` read the same ones; the API refuses a bad one with its reason."""

    batch = forms.CharField(required=False, max_length=100)
    domain = forms.ChoiceField(required=False, choices=[("", "")] + [(code, code) for code, *_ in DOMAINS])
    task = forms.ChoiceField(required=False, choices=[("", "")] + Task.choices)
    attribute = forms.ChoiceField(required=False, choices=[("", "")] + Attribute.choices)
    variant = forms.ChoiceField(required=False, choices=[("", "")] + Variant.choices)
    retained = forms.ChoiceField(required=False, choices=[("", "")] + YES_NO)
    posterior_min = forms.FloatField(required=False, min_value=0, max_value=1)
    posterior_max = forms.FloatField(required=False, min_value=0, max_value=1)
    disagrees = forms.ChoiceField(required=False, choices=[("", "")] + YES_NO,
                                  help_text="yes: the aggregate's label is not the intended answer")
    flagged = forms.ChoiceField(required=False, choices=[("", "")] + YES_NO, help_text="yes: an open flag")
    decided = forms.ChoiceField(required=False, choices=[("", "")] + DECIDED)
    sort = forms.ChoiceField(required=False, choices=[(s, s) for s in ITEM_SORTS])
    dir = forms.ChoiceField(required=False, choices=[("asc", "ascending"), ("desc", "descending")])
    after = forms.CharField(required=False, max_length=200, help_text="the `next` cursor of the page before")
    before = forms.CharField(required=False, max_length=200, help_text="the `previous` cursor of the page after")
    size = forms.IntegerField(required=False, min_value=1, max_value=500)

    def __init__(self, data=None, *, known_only: bool = False, **kwargs):
        self.known_only = known_only
        super().__init__(data, **kwargs)

    def clean_batch(self):
        name = self.cleaned_data["batch"].strip()
        if not name:
            return None
        batch = Batch.objects.filter(name=name).only("pk", "name").first()
        if batch is None:
            raise forms.ValidationError(f"no batch named {name!r}")
        return batch

    def clean(self):
        data = super().clean()
        if self.known_only and self.data is not None:
            unknown = sorted(set(self.data) - set(self.fields))
            if unknown:
                raise forms.ValidationError(f"unknown parameter {unknown[0]!r}; known: {', '.join(self.fields)}")
        low, high = data.get("posterior_min"), data.get("posterior_max")
        if low is not None and high is not None and low > high:
            self.add_error("posterior_max", "must not be below posterior_min")
        if data.get("after") and data.get("before"):
            self.add_error("before", "give after or before, not both")
        return data


class ItemBulkForm(forms.Form):
    """A bulk action on the items ticked on a page of the item list."""

    item = forms.Field(required=False)  # the ticked item ids (read in clean_item; the services check them)
    action = forms.ChoiceField(choices=[("keep", "Keep"), ("drop", "Drop"), ("resolve", "Resolve flags"), ("export", "Export CSV")])
    reason = forms.CharField(required=False, max_length=5000)

    def clean_item(self):
        ids = self.data.getlist("item") if hasattr(self.data, "getlist") else self.data.get("item", [])
        ids = sorted({str(i) for i in ids if str(i).strip()})
        if not ids:
            raise forms.ValidationError("tick at least one item")
        if len(ids) > 1000:
            raise forms.ValidationError("at most 1000 items at once")
        return ids

    def clean(self):
        data = super().clean()
        if data.get("action") in ("keep", "drop") and not (data.get("reason") or "").strip():
            self.add_error("reason", "give the reason for the decision")
        return data
