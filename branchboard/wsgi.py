from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "branchboard.settings")
application = get_wsgi_application()

# Import every view and template tag now (the URLconf), not on the first request.
get_resolver().url_patterns  # noqa: B018
