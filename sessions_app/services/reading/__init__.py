"""Reading a session's records through the index, for the writers and the pages alike.

Nothing here writes. `records` (records with their parsed lines, read from the file or
its archive, each checked against the index), `branches` (an abandoned branch: the
graph from the turn it split off down to its leaf), `prompts` (a turn's prompt in full),
`lines` (a line as the index reads it: cut past BRANCHBOARD_MAX_RECORD_BYTES).
"""
