from __future__ import annotations

from django.urls import path

from . import views

app_name = "sessions"

urlpatterns = [
    path("", views.project_list, name="project_list"),
]
