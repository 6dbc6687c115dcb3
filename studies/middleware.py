"""A study participant reaches nothing but their study's work.

Their account is pseudonymous and made by the study link (`services.participant_arrive`);
whatever they open, this middleware lets through only:

- their study's own pages (`/s/<token>/…`), logging out, static files;
- the audit API (`GET /api/v1/next-item/`, `POST /api/v1/judgments/`), for verification
  studies: next-item answers from the study's rules (`services.participant_next_work`:
  qualification first, the gold rule, `204` past the quota or once finished), and a
  judgment never comes back with the next item (`?next=1` is dropped: the next one is
  always asked for through the rules).

Anything else is a redirect to their study page (pages) or a 403 (API). Everyone else pays
nothing: the participant lookup only runs for the pseudonymous usernames.
"""
from django.http import JsonResponse
from django.shortcuts import redirect

from . import selectors

ALWAYS = ("/static/", "/accounts/logout/")


class StudyParticipantMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated or not user.username.startswith(selectors.PSEUDONYM_PREFIX):
            return self.get_response(request)
        participant = selectors.participant_for_user(user=user)
        if participant is None:
            return self.get_response(request)
        path = request.path_info
        if path.startswith(f"/s/{participant.study.token}/") or path.startswith(ALWAYS):
            return self.get_response(request)
        if not participant.study.is_writing:
            if path == "/api/v1/next-item/" and request.method == "GET":
                from .views import participant_next_item_api

                return participant_next_item_api(request, participant)
            if path == "/api/v1/judgments/" and request.method == "POST":
                if "next" in request.GET:
                    request.GET = request.GET.copy()
                    request.GET.pop("next")
                return self.get_response(request)
        if path.startswith("/api/"):
            return JsonResponse({"detail": "a study participant can only reach their study's work"}, status=403)
        return redirect("studies:work", token=participant.study.token)
