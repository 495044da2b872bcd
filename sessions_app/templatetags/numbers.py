"""Numbers and times for people in templates (`rendering.numbers`): `{% load numbers %}`."""

from __future__ import annotations

from django import template

from ..rendering.numbers import tokens, usd, when, when_full

register = template.Library()

register.filter("tokens", tokens)
register.filter("usd", usd)
register.filter("when", when)
register.filter("when_full", when_full)
