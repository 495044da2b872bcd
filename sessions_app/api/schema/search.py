"""The OpenAPI description of /api/search's answer (api_schema serves it)."""

from __future__ import annotations

SEARCH = {
    "type": "object",
    "properties": {
        "query": {"type": "string"},
        "terms": {"type": "array", "items": {"type": "string"}},
        "too_short": {"type": "array", "items": {"type": "string"}},
        "matches": {"type": "integer"},
        "truncated": {"type": "boolean"},
        "session_count": {"type": "integer", "description": "sessions found, on every page"},
        "page": {"type": "integer"},
        "next_page": {
            "type": ["integer", "null"],
            "description": "the page with the next sessions (`page=`), null after the last",
        },
        "sessions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "session_id": {"type": "string", "format": "uuid"},
                    "ref": {"type": "string", "description": "user@machine/<id> on a hub"},
                    "title": {"type": "string"},
                    "agent": {"type": "string"},
                    "more": {"type": "integer", "description": "hits beyond those listed"},
                    "hits": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "line": {"type": "integer"},
                                "turn": {"type": ["integer", "null"]},
                                "active": {"type": "boolean"},
                                "part": {"type": "string"},
                                "snippet": {"type": "string", "description": "plain text"},
                                "marks": {
                                    "type": "array",
                                    "description": "[start, end) of each match in snippet",
                                    "items": {"type": "array", "items": {"type": "integer"}},
                                },
                                "also_in": {"type": "integer"},
                                "url": {"type": "string"},
                            },
                        },
                    },
                },
            },
        },
    },
}
