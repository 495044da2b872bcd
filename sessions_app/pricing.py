"""What tokens cost: genai-prices' bundled data (nothing is fetched), or prices set per model.

Prices are US dollars per million tokens of each kind. A model neither source
knows has no price: its cost is unknown, never zero. The bundled data's prices
are those in force on the day a message was sent, and a request whose input
(cache included) passes a model's tier threshold pays the tier's rate for all
of its tokens, as the providers bill it. Cache writes kept for an hour (Claude
Code says how many) pay the one-hour rate, the others the five-minute rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from decimal import Decimal
from functools import lru_cache
from importlib.metadata import version
from typing import Any

from django.conf import settings

MILLION = Decimal(1_000_000)
# Where the providers' long-context rates start; the grouping of usage follows it.
LONG_CONTEXT = 200_000


@dataclass(frozen=True)
class Rates:
    """Dollars per million tokens of each kind, for one model on one day."""

    input: Decimal
    output: Decimal
    cache_write: Decimal
    cache_read: Decimal
    cache_write_1h: Decimal
    source: str

    def cost(
        self, input: int, output: int, cache_write: int, cache_read: int, cache_write_1h: int = 0
    ) -> Decimal:
        """Dollars for these tokens; `cache_write_1h` is the part of `cache_write` kept an hour."""
        hour = min(cache_write_1h, cache_write)
        total = (
            input * self.input
            + output * self.output
            + (cache_write - hour) * self.cache_write
            + hour * self.cache_write_1h
            + cache_read * self.cache_read
        )
        return total / MILLION


def bundled_source() -> str:
    """The price data's name and version, as the pages show it."""
    return f"genai-prices {version('genai-prices')} (bundled data, offline)"


def rates(model: str, day: date | None, *, long_context: bool = False) -> Rates | None:
    """The model's rates on `day` (today when unknown); None when no price is known."""
    override = settings.MODEL_PRICES.get(model)
    if override is not None:
        return _override(model, override)
    return _bundled(model, day or date.today(), long_context)


def _override(model: str, prices: dict[str, Any]) -> Rates:
    """A setting's prices; a cache kind it leaves out pays the input price (an hour's write,
    the cache write price)."""
    base = Decimal(str(prices.get("input", 0)))
    write = Decimal(str(prices.get("cache_write", base)))
    return Rates(
        base,
        Decimal(str(prices.get("output", 0))),
        write,
        Decimal(str(prices.get("cache_read", base))),
        Decimal(str(prices.get("cache_write_1h", write))),
        "your setting (BRANCHBOARD_MODEL_PRICES)",
    )


@lru_cache(maxsize=1024)
def _bundled(model: str, day: date, long_context: bool) -> Rates | None:
    from genai_prices import data_snapshot, types  # imported once, when a page needs a price

    if not model or model.startswith("<"):
        return None  # "<synthetic>": the CLI's own messages, never billed
    try:
        _provider, info = data_snapshot.get_snapshot().find_provider_model(model, None, None, None)
    except LookupError:
        return None
    prices = info.get_prices(datetime.combine(day, time(12), tzinfo=UTC))

    def rate(name: str, fallback: Decimal | None = None) -> Decimal:
        value = getattr(prices, name, None)
        if isinstance(value, types.TieredPrices):
            chosen = value.base
            for tier in value.tiers:
                if long_context and tier.start <= LONG_CONTEXT:
                    chosen = tier.price
            return chosen
        if value is None:
            return fallback if fallback is not None else Decimal(0)
        return Decimal(value)

    base = rate("input_mtok")
    write = rate("cache_write_mtok", base)
    return Rates(
        base,
        rate("output_mtok"),
        write,
        rate("cache_read_mtok", base),
        rate("cache_write_1h_mtok", write),
        bundled_source(),
    )
