from django import forms

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
