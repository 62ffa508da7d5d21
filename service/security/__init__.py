"""Who is calling: bearer tokens, the signing secret, minting."""
