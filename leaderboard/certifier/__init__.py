"""The certifier's bundle (Consumer Protection Act s36, regulation 11; issue 33): one signed
file of the promotion's records for a period, verifiable offline (docs/certifier-export.md).

`export` reads the central database into the bundle's members, `manifest` lists and signs
them (the central service's Ed25519 key) and reads a bundle back, `verify` checks one with
nothing but the file: the manifest's signature, every member's SHA-256, every table message's
signature, the scores against them, the standings recomputed and the Final's seat draw.
"""
