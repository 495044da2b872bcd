"""The OpenAPI description of /api/usage/activity's and /api/usage/tools' answers."""

from __future__ import annotations

from ...formats import AGENTS

_TOTALS = {
    "input_tokens": {"type": "integer"},
    "output_tokens": {"type": "integer"},
    "cache_write_tokens": {"type": "integer"},
    "cache_read_tokens": {"type": "integer"},
    "cache_write_1h_tokens": {"type": "integer", "description": "of cache_write_tokens"},
    "reasoning_tokens": {"type": "integer", "description": "of output_tokens"},
    "messages": {"type": "integer", "description": "API messages, each once (fork copies not)"},
    "cost_usd": {
        "type": "string",
        "description": "dollars, six decimals; the models in unpriced_models left out",
    },
    "unpriced_models": {"type": "array", "items": {"type": "string"}},
}

ACTIVITY = {
    "type": "object",
    "required": ["days", "totals"],
    "properties": {
        "days": {
            "type": "array",
            "description": "one per day (UTC) and project with turns or usage, oldest first",
            "items": {
                "type": "object",
                "required": ["day", "project_id", "project", "agent", "turns", *_TOTALS],
                "properties": {
                    "day": {"type": ["string", "null"], "format": "date"},
                    "project_id": {"type": "integer"},
                    "project": {"type": "string", "description": "its working folder"},
                    "agent": {"type": "string", "enum": list(AGENTS)},
                    "turns": {
                        "type": "integer",
                        "description": "prompts started that day (a fork's copies once)",
                    },
                    **_TOTALS,
                },
            },
        },
        "totals": {
            "type": "object",
            "required": ["turns", *_TOTALS],
            "properties": {"turns": {"type": "integer"}, **_TOTALS},
        },
    },
}

TOOLS = {
    "type": "object",
    "required": ["project", "tools"],
    "properties": {
        "project": {
            "type": "object",
            "required": ["id", "label", "agent"],
            "properties": {
                "id": {"type": "integer"},
                "label": {"type": "string"},
                "agent": {"type": "string", "enum": list(AGENTS)},
            },
        },
        "tools": {
            "type": "array",
            "description": "most calls first; each call once (a fork's copies not)",
            "items": {
                "type": "object",
                "required": ["name", "calls", "answered", "failed", "failure_rate"],
                "properties": {
                    "name": {"type": "string"},
                    "calls": {"type": "integer"},
                    "answered": {"type": "integer", "description": "calls with a result"},
                    "failed": {
                        "type": "integer",
                        "description": "results marked an error, or a shell's exit status not 0",
                    },
                    "failure_rate": {"type": "number", "description": "failed / answered"},
                },
            },
        },
    },
}
