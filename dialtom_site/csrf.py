"""The site's own page for a refused form (CSRF_FAILURE_VIEW): styled like the other error
pages (templates/_error.html), saying what happened and how to go on, not Django's bare text."""
from django.shortcuts import render


def csrf_failure(request, reason: str = ""):
    return render(request, "403_csrf.html", {"reason": reason}, status=403)
