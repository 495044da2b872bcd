"""Numbers and times for people: 12.3k tokens, $1.24, "3 hours ago" with the date beside."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.timesince import timesince


def tokens(value: int | float | None) -> str:
    """A token count: 950, 12.3k, 4.56M, 1.2B."""
    n = float(value or 0)
    for size, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= size:
            scaled = n / size
            return f"{scaled:.3g}{suffix}" if scaled < 100 else f"{scaled:.0f}{suffix}"
    return f"{n:.0f}"


def usd(value: Decimal | float | None) -> str:
    """Dollars: $0.0042 below a cent, $1.24, $1,234."""
    amount = Decimal(value or 0)
    if amount == 0:
        return "$0"
    if abs(amount) < Decimal("0.01"):
        return f"${amount:.4f}"
    if abs(amount) >= 1000:
        return f"${amount:,.0f}"
    return f"${amount:,.2f}"


def _time(moment: datetime | None, *, full: bool) -> SafeString | str:
    if moment is None:
        return ""
    absolute = f"{moment:%Y-%m-%d %H:%M} UTC"
    if timezone.now() - moment < timedelta(minutes=1):
        relative = "just now"  # not "0 minutes ago" (nor a time ahead of a skewed clock)
    else:
        relative = f"{timesince(moment).split(',')[0]} ago"
    shown = f"{relative} · {absolute}" if full else relative
    return format_html(
        '<time datetime="{}" title="{}">{}</time>', moment.isoformat(), absolute, shown
    )


def when(moment: datetime | None) -> SafeString | str:
    """ "3 hours ago", with the date and time (UTC) on hover and in the markup."""
    return _time(moment, full=False)


def when_full(moment: datetime | None) -> SafeString | str:
    """ "3 hours ago · 2026-11-24 14:02 UTC": relative and absolute, both shown."""
    return _time(moment, full=True)
