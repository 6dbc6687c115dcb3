from django.contrib import messages
from django.contrib.auth import login, update_session_auth_hash
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import PasswordChangeForm, SetPasswordForm
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from . import services
from .models import Role


def client_ip(request) -> str:
    # Behind a proxy, configure it to set REMOTE_ADDR (e.g. gunicorn --forwarded-allow-ips).
    return request.META.get("REMOTE_ADDR", "")


@login_required
def home(request):
    """Each person lands on the work their role gives them."""
    user = request.user
    if user.is_project_staff:
        return redirect("/dashboard/")
    if user.can_audit:
        return redirect("verification:batches")
    if user.role == Role.CROWD_WORKER:
        return redirect("/annotate/")
    if user.role == Role.RELEASE_READER:
        return redirect("release-pages:list")
    return render(request, "home.html")


class ThrottledLoginView(auth_views.LoginView):
    """Django's login, refusing a username+IP after DIALTOM_LOGIN_MAX_FAILURES failures in the
    window (a success does not reset the count: accounts.services, login throttling)."""

    def post(self, request, *args, **kwargs):
        username = request.POST.get("username", "")
        if services.login_is_throttled(username=username, ip=client_ip(request)):
            form = self.get_form()
            form.errors.clear()
            form.add_error(None, "Too many failed attempts. Please wait a few minutes and try again.")
            return self.render_to_response(self.get_context_data(form=form), status=429)
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form):
        services.login_failure_record(username=self.request.POST.get("username", ""), ip=client_ip(self.request))
        return super().form_invalid(form)


@require_http_methods(["GET", "POST"])
def link_login(request, token):
    """A one-time login link: GET asks to confirm (link scanners do not spend it), POST logs in."""
    if request.method == "POST":
        user = services.login_link_redeem(token=token)
    else:
        user = services.login_link_user(token=token)
    if user is None:
        return render(request, "accounts/link_login.html", {"invalid": True}, status=400)
    if request.method == "POST":
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, f"Welcome, {user.username}. Set a password in your profile (the link with your name, top right) or ask staff for a new link next time.")
        return redirect("home")
    return render(request, "accounts/link_login.html", {"person": user})


@login_required
@require_http_methods(["GET", "POST"])
def profile(request):
    """Who I am, my password (set one after a login link, or change it), and display settings."""
    user = request.user
    form_class = PasswordChangeForm if user.has_usable_password() else SetPasswordForm
    form = form_class(user, request.POST or None)
    if request.method == "POST" and form.is_valid():
        form.save()
        update_session_auth_hash(request, form.user)
        messages.success(request, "Your password is saved.")
        return redirect("accounts:profile")
    return render(request, "accounts/profile.html", _profile_context(request, form=form), status=400 if form.errors else 200)


def _profile_context(request, *, form=None, new_token: str = "") -> dict:
    from rest_framework.authtoken.models import Token

    user = request.user
    if form is None:
        form = (PasswordChangeForm if user.has_usable_password() else SetPasswordForm)(user)
    return {"form": form, "token": Token.objects.filter(user=user).first(), "new_token": new_token}


@login_required
@require_POST
def profile_token(request):
    """Make (or replace) my API token, or revoke it. A new key is shown once, on this response."""
    if request.POST.get("action") == "revoke":
        if services.api_token_revoke(user=request.user):
            messages.success(request, "Your API token is revoked: it no longer works.")
        return redirect(reverse("accounts:profile") + "#api-token")
    key = services.api_token_replace(user=request.user)
    response = render(request, "accounts/profile.html", _profile_context(request, new_token=key))
    response["Cache-Control"] = "no-store"  # the key is shown once and must not be kept
    return response


def admin_login(request):
    """The admin's login door. One login form, the throttled one; someone already logged
    in whom the admin refuses is told so, instead of being shown the login form again."""
    if request.user.is_authenticated:
        return render(
            request, "403.html",
            {"reason": f"The admin is for project staff; you are logged in as {request.user.username} "
                       f"({request.user.get_role_display().lower()})."},
            status=403,
        )
    query = request.META.get("QUERY_STRING", "")
    return redirect("/accounts/login/" + (f"?{query}" if query else ""))
