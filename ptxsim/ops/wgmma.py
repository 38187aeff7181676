"""wgmma (placeholder family, filled in below)."""
OPS = {}
