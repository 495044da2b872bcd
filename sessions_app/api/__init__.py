"""The JSON API: `views` (the pages' actions for scripts), `auth` (bearer tokens), `archive`
(restore), `hub` (the hub's end of push and pull), `schema` (the OpenAPI description), `urls`.
"""
