"""Sub-commands of the ptxmoe CLI."""
