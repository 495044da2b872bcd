"""Where a session split from its parent, and what kind it is, as every page names them."""

from __future__ import annotations

from django import template

from ..rendering import splits

register = template.Library()

register.filter("kind_label", splits.kind_label)
register.filter("split_label", splits.split_label)
register.filter("after_turn", splits.after_turn)
