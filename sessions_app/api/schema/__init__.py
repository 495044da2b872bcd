"""The OpenAPI description served at /api/openapi.json (a test keeps it true)."""

from __future__ import annotations

from ...formats import AGENTS
from ...session_refs import REF_PATTERN
from .hub import hub_paths
from .search import SEARCH
from .usage import ACTIVITY, TOOLS

_ERROR = {"$ref": "#/components/schemas/Error"}
_SESSION = {"$ref": "#/components/schemas/Session"}
_FRESH_START = {"$ref": "#/components/schemas/FreshStart"}


def _query(name: str, description: str) -> dict:
    return {"name": name, "in": "query", "schema": {"type": "string"}, "description": description}


def _responses(ok: str, schema: dict, *codes: int) -> dict:
    texts = {
        400: "turn out of range, not a whole number or not a prompt; malformed body",
        401: "missing or invalid bearer token",
        403: "the token's user may not write (team mode)",
        404: "unknown session",
        405: "wrong HTTP method (the Allow header names the right one)",
        409: "source changed on disk, still being written, target exists, nothing to undo",
        411: "a body sent without Content-Length (chunked)",
        413: "the body is larger than BRANCHBOARD_MAX_BODY bytes",
    }
    out = {ok: {"description": "done", "content": {"application/json": {"schema": schema}}}}
    for code in codes:
        out[str(code)] = {
            "description": texts[code],
            "content": {"application/json": {"schema": _ERROR}},
        }
    return out


def _no_project(responses: dict) -> dict:
    """The usage filters' 404: the project named is not there."""
    responses["404"] = {**responses["404"], "description": "no such project"}
    return responses


_ID = {
    "name": "session_id",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "pattern": REF_PATTERN},
    "description": "the session's id (a UUID), or `user@machine/<id>` on a team hub",
}

# A POST on a session without a body, answering with the session.
_NO_BODY = {"parameters": [_ID], "responses": _responses("200", _SESSION, 401, 403, 404, 405, 409)}


OPENAPI: dict = {
    "openapi": "3.1.0",
    "info": {
        "title": "branchboard API",
        "version": "1",
        "description": "Branch, fork and rewind Claude Code and Qwen Code sessions. "
        "Every request needs `Authorization: Bearer <token>` (manage.py create_api_token; "
        "a local dashboard also takes its owner token, manage.py dashboard_url --token).",
    },
    "components": {
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        "schemas": {
            "Error": {
                "type": "object",
                "required": ["error"],
                "properties": {"error": {"type": "string"}},
            },
            "FreshStart": {
                "description": "Edit & fork before turn 1: nothing comes before it, so no "
                "session is made. Edit `prompt`, run `command` (a new session in the same "
                "folder) and send it there.",
                "type": "object",
                "required": ["session_id", "turn", "prompt", "command"],
                "properties": {
                    "session_id": {"type": "null"},
                    "turn": {"type": "integer", "const": 1},
                    "prompt": {"type": "string"},
                    "command": {"type": "string"},
                },
            },
            "Turn": {
                "type": "object",
                "required": ["turn", "prompt"],
                "properties": {
                    "turn": {"type": "integer"},
                    "prompt": {"type": "string"},
                    "timestamp": {"type": ["string", "null"]},
                    "uuid": {"type": "string"},
                },
            },
            "Session": {
                "type": "object",
                "required": [
                    "session_id",
                    "ref",
                    "namespace",
                    "path",
                    "title",
                    "agent",
                    "turns",
                    "parent_id",
                    "kind",
                    "turn",
                    "resume_command",
                    "children",
                    "rewind_undo_available",
                    "archive_damage",
                ],
                "properties": {
                    "session_id": {"type": "string", "format": "uuid"},
                    "ref": {"type": "string", "description": "the id, or user@machine/<id>"},
                    "namespace": {"type": "string", "description": "user@machine, or empty"},
                    "path": {"type": "string"},
                    "title": {"type": "string"},
                    "agent": {"type": "string", "enum": list(AGENTS)},
                    "turns": {"type": "integer"},
                    "parent_id": {"type": ["string", "null"]},
                    "parent_ref": {"type": ["string", "null"]},
                    "kind": {
                        "type": "string",
                        "enum": [
                            "original",
                            "branch",
                            "fork",
                            "fork_before",
                            "rewind_backup",
                            "revived",
                        ],
                    },
                    "turn": {"type": ["integer", "null"]},
                    "resume_command": {"type": "string"},
                    "children": {"type": "array", "items": {"type": "object"}},
                    "rewind_undo_available": {"type": "boolean"},
                    "archive_damage": {
                        "type": ["object", "null"],
                        "description": "null unless the file is gone and the archive's copy "
                        "is damaged: then the text shown comes from the index and may be "
                        "incomplete, and the session cannot be restored",
                        "required": ["from_byte", "missing", "message"],
                        "properties": {
                            "from_byte": {"type": "integer", "minimum": 0},
                            "missing": {
                                "type": "boolean",
                                "description": "the piece there is missing, not corrupted",
                            },
                            "message": {"type": "string"},
                        },
                    },
                    "turn_list": {"type": "array", "items": {"$ref": "#/components/schemas/Turn"}},
                    "abandoned": {
                        "type": "array",
                        "description": "branches an in-CLI rewind left: fork with their "
                        "`leaf_uuid` as `leaf` to bring one back",
                        "items": {"type": "object"},
                    },
                    "prompt": {"type": "string"},
                    "backup_id": {"type": ["string", "null"]},
                },
            },
        },
    },
    "security": [{"bearer": []}],
    "paths": {
        "/api/search": {
            "get": {
                "summary": "Search every session: ranked hits grouped by session, one per "
                "distinct text (a text forks copied counts once, with `also_in`)",
                "parameters": [
                    _query(
                        "q",
                        'words or code; "quoted phrases" kept whole; each term '
                        "(3 characters at least) found as a case-insensitive substring",
                    ),
                    _query("project", "only this project (its number)"),
                    _query("agent", "only this agent (claude, qwen)"),
                    _query("since", "from this day (YYYY-MM-DD)"),
                    _query("until", "up to and including this day (YYYY-MM-DD)"),
                    _query("all", "1: abandoned branches and subagents too"),
                    _query("session", "only this session (its id)"),
                    _query("page", "1 (the best sessions), 2 (the next ones), …"),
                ],
                "responses": _responses("200", SEARCH, 400, 401, 405),
            }
        },
        "/api/usage/activity": {
            "get": {
                "summary": "Turns, tokens and cost per day (UTC) and project, the numbers of "
                "/usage/ (each message once); /usage.csv?by=activity gives the same",
                "parameters": [
                    _query("project", "only this project (its number)"),
                    _query("agent", "only this agent (" + ", ".join(AGENTS) + ")"),
                    _query("since", "from this day (YYYY-MM-DD)"),
                    _query("until", "up to and including this day (YYYY-MM-DD)"),
                ],
                "responses": _no_project(_responses("200", ACTIVITY, 400, 401, 404, 405)),
            }
        },
        "/api/usage/tools": {
            "get": {
                "summary": "The tools a project's sessions called, most first, and how many "
                "failed (read from its files: one project a request); /usage/tools.csv gives "
                "the same",
                "parameters": [
                    {**_query("project", "the project (its number)"), "required": True},
                    _query("since", "from this day (YYYY-MM-DD)"),
                    _query("until", "up to and including this day (YYYY-MM-DD)"),
                ],
                "responses": _no_project(_responses("200", TOOLS, 400, 401, 404, 405)),
            }
        },
        "/api/sessions/{session_id}": {
            "get": {
                "summary": "A session: metadata, turns with prompt text, lineage",
                "parameters": [_ID],
                "responses": _responses("200", _SESSION, 401, 404, 405),
            }
        },
        "/api/sessions/{session_id}/fork": {
            "post": {
                "summary": "Branch (no turn), fork at a turn, or fork before it "
                "(include_turn false, which needs a turn)",
                "parameters": [_ID],
                "requestBody": {
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "properties": {
                                    "turn": {"type": "integer", "minimum": 1},
                                    "include_turn": {
                                        "type": "boolean",
                                        "default": True,
                                        "description": "false: fork before the turn (keep "
                                        "1..turn-1, hand its prompt back); needs a turn",
                                    },
                                    "title": {"type": "string", "maxLength": 300},
                                    "leaf": {
                                        "type": "string",
                                        "maxLength": 64,
                                        "description": "bring back the abandoned branch ending "
                                        "at this record (`abandoned[].leaf_uuid`) as a session "
                                        "of its own; not with turn",
                                    },
                                    "worktree": {
                                        "oneOf": [
                                            {"type": "boolean"},
                                            {"type": "string", "maxLength": 64},
                                        ],
                                        "default": False,
                                        "description": "go on in a new git worktree of the "
                                        "session's repository: true for a made-up name, or "
                                        "its name; the answer then has `worktree` (path, "
                                        "branch, base)",
                                    },
                                    "leave_changes": {
                                        "type": "boolean",
                                        "default": False,
                                        "description": "with worktree: go on although the "
                                        "source's working tree has uncommitted changes",
                                    },
                                    "with_files": {
                                        "type": "boolean",
                                        "default": False,
                                        "description": "with worktree: put the files Claude "
                                        "Code edited back as they were at the turn, from its "
                                        "file backups; the answer's `worktree.files` lists "
                                        "`restored`, `removed`, `no_backup` and `skipped`",
                                    },
                                },
                            }
                        }
                    }
                },
                "responses": {
                    **_responses("201", _SESSION, 400, 401, 403, 404, 405, 409, 411, 413),
                    "200": {
                        "description": "turn 1 with include_turn false: no session, the "
                        "prompt to edit and the command that starts a new session",
                        "content": {"application/json": {"schema": _FRESH_START}},
                    },
                },
            }
        },
        "/api/sessions/{session_id}/rewind": {
            "post": {
                "summary": "Rewind so the CLI resumes after turn N-1",
                "parameters": [_ID],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["turn"],
                                "properties": {"turn": {"type": "integer", "minimum": 2}},
                            }
                        }
                    },
                },
                "responses": _responses("200", _SESSION, 400, 401, 403, 404, 405, 409, 411, 413),
            }
        },
        "/api/sessions/{session_id}/rewind/undo": {"post": {"summary": "Undo", **_NO_BODY}},
        "/api/sessions/{session_id}/restore": {"post": {"summary": "Restore", **_NO_BODY}},
        **hub_paths(_query, _responses),
    },
}
