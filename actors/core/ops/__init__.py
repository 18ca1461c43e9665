"""Pure halves of the operator's commands: their JSON, the troubleshooting words, and the
load acceptance's arithmetic and verdict."""
