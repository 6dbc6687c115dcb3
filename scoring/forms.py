from django import forms


class UploadForm(forms.Form):
    name = forms.SlugField(max_length=100, help_text="a unique run name, e.g. gpt-4o-2024-08-cot")
    model_name = forms.CharField(max_length=200, help_text="the model, as the leaderboard shows it")
    release = forms.ChoiceField(choices=[], help_text="the release the predictions answer")
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    file = forms.FileField(help_text='JSONL, one {"item_id", "prediction": "A"–"D" or "NOTA", "reasoning"?} a line')

    def __init__(self, *args, releases=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["release"].choices = [(v, v) for v in releases]
