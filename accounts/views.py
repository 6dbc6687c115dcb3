from django.contrib.auth.decorators import login_required
from django.shortcuts import render


@login_required
def home(request):
    """Each person lands on the work their role gives them."""
    return render(request, "home.html")
