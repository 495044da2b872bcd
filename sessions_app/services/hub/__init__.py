"""A team hub: machines push their session files to it, anyone branches them there,
and the forks made there go back to the machine they belong to.

- `namespaces`: where a namespace's files live on the hub, and the check of a pushed path;
  which namespace a root is, `services.hub_folder`, lies below the importer that asks it.
- `receiving`: the hub's side of a push: proofs, chunks, atomic replacement, import;
  `chunks` (a chunk decompressed within its announced length, written under its lock),
  `quotas` (a namespace's bytes), `expiring` (pushes never committed let go).
- `client`: the machine's side of the wire (HTTP, zstd, the token in the data folder).
- `pushing`, `pulling`: what a machine sends, and the forks it takes back.
"""
