"""Staff forms of the study pages (the participant's pages are plain forms in the templates)."""
from decimal import Decimal

from django import forms

from .models import Platform


class StudyForm(forms.Form):
    name = forms.SlugField(max_length=100)
    platform = forms.ChoiceField(choices=Platform.choices)
    batches = forms.CharField(required=False, help_text="verification: batch names, separated by spaces or commas")
    reference_set = forms.SlugField(required=False, help_text="crowd writing: the reference set")
    quota = forms.IntegerField(min_value=1, max_value=100_000, help_text="items (or contexts) per participant")
    session_minutes = forms.IntegerField(min_value=1, max_value=10_080, initial=60)
    completion_code = forms.CharField(max_length=64)
    screen_out_code = forms.CharField(max_length=64, required=False)
    pay_per_item = forms.DecimalField(min_value=0, decimal_places=4, required=False)
    pay_per_hour = forms.DecimalField(min_value=0, decimal_places=4, required=False)
    currency = forms.CharField(max_length=3, initial="GBP")
    minimum_hourly = forms.DecimalField(min_value=0, decimal_places=2, required=False)
    qualification_batch = forms.SlugField(required=False, help_text="a batch of gold items audited first")
    qualification_pass_mark = forms.FloatField(min_value=0, max_value=1, initial=0.8)
    gold_threshold = forms.FloatField(min_value=0, max_value=1, required=False, help_text="stop below this gold accuracy")

    def service_kwargs(self) -> dict:
        data = dict(self.cleaned_data)
        data["batches"] = [b for b in data["batches"].replace(",", " ").split() if b]
        data["reference_set"] = data["reference_set"] or None
        data["qualification_batch"] = data["qualification_batch"] or None
        return data


class OverrideForm(forms.Form):
    reason = forms.CharField(max_length=500)


class BonusForm(forms.Form):
    amount = forms.DecimalField(min_value=Decimal("0.01"), decimal_places=2)
    reason = forms.CharField(max_length=300)
