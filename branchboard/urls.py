from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

urlpatterns = [
    # Browsers and tools ask for /favicon.ico whatever the page links: no 404 in the log.
    path(
        "favicon.ico",
        login_not_required(
            RedirectView.as_view(url=static("sessions_app/favicon.svg"), permanent=True)
        ),
    ),
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/", include("sessions_app.api.urls")),
    path("", include("sessions_app.urls")),
]

# Errors use the site's own page (JSON under /api/): sessions_app/pages/errors.py.
handler400 = "sessions_app.pages.errors.bad_request"
handler403 = "sessions_app.pages.errors.permission_denied"
handler404 = "sessions_app.pages.errors.page_not_found"
handler500 = "sessions_app.pages.errors.server_error"
