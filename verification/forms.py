"""The audit form: what a verifier posts. Letters are the displayed ones; services map them back."""
from django import forms

from .models import SkipReason

CHOICES = [("A", "A"), ("B", "B"), ("C", "C"), ("D", "D"), ("NOTA", "None of the above"),
           ("NONE", "None is correct"), ("MULTIPLE", "More than one is correct")]


class AuditForm(forms.Form):
    claim = forms.UUIDField(widget=forms.HiddenInput)
    idempotency_key = forms.UUIDField(widget=forms.HiddenInput)
    action = forms.ChoiceField(choices=[("submit", "submit"), ("skip", "skip")], required=False)
    choice = forms.ChoiceField(choices=CHOICES, required=False)
    implausible = forms.MultipleChoiceField(choices=CHOICES[:4], required=False)
    comment = forms.CharField(required=False, max_length=5000)
    skip_reason = forms.ChoiceField(choices=SkipReason.choices, required=False)

    def clean(self):
        data = super().clean()
        if data.get("action") == "skip":
            if not data.get("skip_reason"):
                self.add_error("skip_reason", "Say why you skip this item.")
        elif not data.get("choice"):
            self.add_error("choice", "Pick an option, or say none / more than one is correct.")
        return data


class ChangeForm(forms.Form):
    choice = forms.ChoiceField(choices=CHOICES)
    implausible = forms.MultipleChoiceField(choices=CHOICES[:4], required=False)
    comment = forms.CharField(required=False, max_length=5000)
