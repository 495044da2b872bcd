"""The hub's endpoints in the OpenAPI description (push_sessions and pull_sessions speak them)."""

from __future__ import annotations

from collections.abc import Callable


def hub_paths(query: Callable[[str, str], dict], responses: Callable[..., dict]) -> dict:
    """The hub's paths, built with the description's own parameter and response makers."""

    def _hub(method: str, summary: str, *names: str, codes: tuple[int, ...] = ()) -> dict:
        params = [query("namespace", "user@machine: the token's user, this machine")]
        params += [query(n, n) for n in names]
        return {
            method: {
                "summary": summary,
                "parameters": params,
                "responses": responses("200", {"type": "object"}, 400, 401, 403, 405, *codes),
            }
        }

    return {
        "/api/hub/whoami": _hub("get", "The namespace this token pushes into"),
        "/api/hub/state": _hub(
            "post", 'What the hub holds of each file: body {"paths": [...]}', codes=(413,)
        ),
        "/api/hub/chunk": _hub(
            "post",
            "Append zstd-compressed bytes to a file (with proof of the bytes held) or to its "
            "staging file",
            "path",
            "offset",
            "length",
            "sha256",
            "head",
            "tail",
            "staged",
            codes=(409, 413),
        ),
        "/api/hub/commit": _hub(
            "post",
            "Put a staged file in place, whole and checked",
            "path",
            "size",
            "sha256",
            codes=(409,),
        ),
        "/api/hub/batch": _hub(
            "post",
            "Many small new files in one zstd body: a manifest line "
            '({"files": [{"path", "size", "sha256"}]}), then their bytes one after the other; '
            "each is stored whole (never over a file the hub holds) or refused on its own "
            '(answer {"files": {path: {"size", "session_id"} or {"error", "status"}}}), '
            "then all are indexed in one pass",
            codes=(409, 413),
        ),
        "/api/hub/catch-up": _hub(
            "post", "Search words and usage of a big committed file", "path", codes=(409,)
        ),
        "/api/hub/pulls": _hub(
            "get",
            "The files made on the hub for this machine: `files`, those its owner made or "
            "accepted (path, session_id, size, sha256, made_by); `held`, a teammate's forks "
            "waiting for the owner's consent (path, session_id, size, made_by, reason); "
            "`more`, how many of each the answer left out (at most 500 each)",
        ),
        "/api/hub/pulled": _hub("post", "The machine holds that file now", "path", "size"),
        "/api/hub/accept": _hub(
            "post",
            "The namespace's owner lets a teammate's fork of their session go to the machine",
            "session",
        ),
        "/api/hub/file": _hub("get", "One of the namespace's files, zstd-compressed", "path"),
    }
